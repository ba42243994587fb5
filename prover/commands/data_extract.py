"""`prover data extract PROJECT --out DIR`: a statement-level dataset (what mathlib-src is) of a Lake project."""
from __future__ import annotations

import sys


def run_extract(project: str, out: str, corpus: str | None = None, exclude: str | None = None,
                n_val: float = 0.02, n_test: float = 0.02, seed: int = 3407) -> int:
    from prover.data.lake_project import NotALakeProject
    from prover.tracing.extract import extract

    def say(line: str) -> None:
        from tqdm import tqdm
        tqdm.write(f"warning: {line}", file=sys.stderr)

    try:
        meta = extract(project, out, corpus=corpus, exclude=exclude, n_val=n_val, n_test=n_test, seed=seed, say=say)
    except NotALakeProject as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    c = meta["counts"]
    splits = ", ".join(f"{k} {v['train']}/{v['val']}/{v['test']}" for k, v in meta["splits"].items() if "train" in v)
    print(f"{c['files']:,} files, {c['premises']:,} premises, {meta['theorems_read']:,} theorems, "
          f"{meta['premise_links']:,} premise links (train/val/test: {splits}) -> {out}")
    return 0
