"""`prover data split`: write RD / RI / PL / PF splits in LeanDojo layout and print their table."""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

from prover.data.dataset import Dataset
from prover.data.errors import UserInputError
from prover.data.splits import STRATEGIES, format_table, make_split, split_table, write_split

log = logging.getLogger(__name__)


# LeanDojo's val and test sizes; a dataset under 20 times their sum gets DEFAULT_FRACTION each.
DEFAULT_COUNT = 2000
DEFAULT_FRACTION = 0.05


def _size(v: float | None, n: int) -> int | float:
    """A count, a fraction (< 1), or for None the default: 2,000, or 5% of a smaller dataset."""
    if v is None:
        return min(DEFAULT_COUNT, round(DEFAULT_FRACTION * n))
    return v if 0 < v < 1 else int(v)


def run_split(data: str, source: str, strategy: str, out: str, seed: int, n_val: float | None,
              n_test: float | None, length_measure: str = "tactics") -> int:
    out_dir = Path(out)  # (a file there is refused by the CLI, with every --out)
    ds = Dataset(Path(data))
    theorems = [t for part in ("train", "val", "test") for t in ds.theorems(f"{source}/{part}")]
    k_val, k_test = _size(n_val, len(theorems)), _size(n_test, len(theorems))
    if isinstance(k_val, int) and isinstance(k_test, int) and k_val + k_test >= len(theorems):
        raise UserInputError(f"--n-val {k_val} + --n-test {k_test} leave no training theorem of the "
                             f"{len(theorems):,} in {ds.root}/{source}: pass smaller counts or "
                             f"fractions (e.g. --n-val 0.05 --n-test 0.05)")
    log.info("re-splitting %d theorems of %s/%s", len(theorems), ds.name, source)
    # Split first: a mistake found there leaves nothing written.
    split = make_split(theorems, strategy, k_val, k_test, seed=seed, length_measure=length_measure)
    corpus_src = next(p for p in (ds.root / "corpus.jsonl", ds.root / "corpus.jsonl.gz") if p.exists())
    out_dir.mkdir(parents=True, exist_ok=True)
    corpus_dst = out_dir / corpus_src.name
    if corpus_src.resolve() != corpus_dst.resolve():
        shutil.copyfile(corpus_src, corpus_dst)
    write_split(split, out_dir / strategy)
    print(format_table({strategy: split_table(split)}))
    print(f"wrote {out_dir / strategy} (train {len(split.train):,}, val {len(split.val):,}, "
          f"test {len(split.test):,}) and {corpus_dst.name}")
    return 0


__all__ = ["run_split", "STRATEGIES"]
