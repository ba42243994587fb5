"""`prover data download NAME --out DIR`: a published dataset, resumed, checked, unpacked, counted."""
from __future__ import annotations

import sys
from pathlib import Path


def check_layout(folder: Path) -> dict:
    """The dataset's counts by `prover data stats`' code; a bad layout or record raises a
    DataError naming it."""
    from prover.commands.data_stats import dataset_stats
    from prover.data.dataset import Dataset
    from prover.data.errors import DataError
    stats = dataset_stats(Dataset(folder, source="the archive's"))
    if not stats["splits"]:
        raise DataError(str(folder), "no split folder (random/, novel_premises/) with train/val/test files")
    return stats


def run_download(name: str, out: str, url: str | None = None, md5: str | None = None, progress: bool = True) -> int:
    from prover.data.download import download
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(unit="B", unit_scale=True, desc=name, file=sys.stderr)

    def report(got: int, total: int | None) -> None:
        bar.total = total
        bar.n = got
        bar.refresh()

    counts: dict = {}

    def check(folder: Path) -> None:
        counts.update(check_layout(folder))

    try:
        path, already = download(name, out, url, md5, progress=report if bar is not None else None, check=check)
    finally:
        if bar is not None:
            bar.close()
    if already:
        print(f"{name}: already in {path} (its checksum matches); nothing to do")
        return 0
    splits = ", ".join(f"{s} {'/'.join(str(n) for n in parts.values())}" for s, parts in counts["splits"].items())
    print(f"{name}: {counts['files']:,} files, {counts['premises']:,} premises, {counts['theorems']:,} theorems "
          f"(train/val/test: {splits}) -> {path}")
    return 0
