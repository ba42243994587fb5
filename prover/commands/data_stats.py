"""`prover data stats`: what a dataset holds, checked against its metadata.json when present."""
from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from prover.data.dataset import Dataset
from prover.utils.runinfo import peak_rss_gib

PARTS = ("train", "val", "test")


def dataset_stats(ds: Dataset) -> dict:
    corpus = ds.corpus()
    kinds = Counter(p.kind for p in corpus.premises)
    splits: dict[str, dict[str, int]] = {}
    tactics: dict[str, dict[str, int]] = {}
    names: set[tuple[str, str]] = set()
    for strategy in ds.strategies():
        splits[strategy], tactics[strategy] = {}, {}
        for part in PARTS:
            if not ds.has_split(f"{strategy}/{part}"):
                continue  # a strategy folder may lack a part; report what is there
            # A part that is there but bad raises or is skipped as ds.on_error says.
            theorems = ds.theorems(f"{strategy}/{part}")
            splits[strategy][part] = len(theorems)
            n_tac = sum(t.proof_length for t in theorems)
            n_prem = sum(1 for t in theorems for tac in t.traced_tactics if tac.premises)
            tactics[strategy][part] = n_tac
            tactics[strategy][f"{part}_with_premises"] = n_prem
            names.update((t.file_path, t.full_name) for t in theorems)
    return {
        "files": len(corpus.files), "premises": len(corpus),
        "premises_by_kind": dict(sorted(kinds.items())),
        "theorems": len(names), "splits": splits, "tactics": tactics,
        "imports_outside_corpus": corpus.unknown_imports, "skipped": ds.skips.as_dict(),
    }


def compare_metadata(stats: dict, metadata: dict) -> list[str]:
    """Differences between our counts and the dataset's own, as readable lines."""
    counts = metadata.get("counts", {})
    diffs = []
    for key in ("files", "premises", "theorems"):
        if key in counts and counts[key] != stats[key]:
            diffs.append(f"{key}: metadata {counts[key]}, read {stats[key]}")
    if "premises_by_kind" in counts and counts["premises_by_kind"] != stats["premises_by_kind"]:
        diffs.append("premises_by_kind differ")
    for strategy, parts in counts.get("splits", {}).items():
        if stats["splits"].get(strategy) != parts:
            diffs.append(f"splits.{strategy}: metadata {parts}, read {stats['splits'].get(strategy)}")
    return diffs


def run_stats(data: str, check_metadata: bool = True, on_error: str = "raise") -> int:
    """Print the counts; `on_error` is data.on_error of the other commands (raise: the first
    bad record stops with its location; skip: bad records are counted and left out)."""
    t0 = time.perf_counter()
    ds = Dataset(Path(data), on_error=on_error, source="--data")
    stats = dataset_stats(ds)
    seconds = time.perf_counter() - t0
    print(f"dataset {ds.root}")
    print(f"  files     {stats['files']:>9,}")
    print(f"  premises  {stats['premises']:>9,}")
    for kind, n in stats["premises_by_kind"].items():
        print(f"    {kind:<16}{n:>9,}")
    print(f"  theorems  {stats['theorems']:>9,} (distinct across split folders)")
    for strategy, parts in stats["splits"].items():
        tac = stats["tactics"][strategy]
        print(f"  {strategy}: " + ", ".join(
            f"{p} {n:,} theorems / {tac[p]:,} tactics ({tac[p + '_with_premises']:,} with premises)"
            for p, n in parts.items()))
    print(f"  {ds.skips.summary()}")
    print(f"  loaded in {seconds:.1f} s, peak RSS {peak_rss_gib():.2f} GiB")
    meta_path = ds.root / "metadata.json"
    if check_metadata and meta_path.exists():
        diffs = compare_metadata(stats, json.loads(meta_path.read_text()))
        if diffs:
            print("  metadata.json: MISMATCH\n    " + "\n    ".join(diffs))
            return 1
        print("  metadata.json: counts match")
    return 0
