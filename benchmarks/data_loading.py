"""Time and memory to load a LeanDojo-format dataset: the corpus and one split strategy.

    python benchmarks/data_loading.py --data ../shared/data/mathlib-src --strategy random

Writes benchmarks/results/data-loading-<dataset>-<strategy>.{json,md}. Run it as its own
process: peak RSS is the process's, so anything loaded before would inflate it.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from prover.benchmarking.harness import git_commit, machine, parser, peak_rss_gib, write_results
from prover.data.dataset import Dataset
from prover.utils.logs import setup_logging


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--data", required=True)
    p.add_argument("--strategy", default="random")
    p.add_argument("--results-dir", default="benchmarks/results")
    args = p.parse_args(argv)
    setup_logging()
    ds = Dataset(Path(args.data))
    stages = {}
    t_all = time.perf_counter()
    t = time.perf_counter()
    corpus = ds.corpus()
    stages["corpus"] = {"seconds": round(time.perf_counter() - t, 2), "count": len(corpus)}
    for part in ("train", "val", "test"):
        t = time.perf_counter()
        theorems = ds.theorems(f"{args.strategy}/{part}")
        stages[part] = {"seconds": round(time.perf_counter() - t, 2), "count": len(theorems)}
    total = round(time.perf_counter() - t_all, 2)
    rss = round(peak_rss_gib(), 2)
    command = f"python benchmarks/data_loading.py --data {args.data} --strategy {args.strategy}"
    result = {"benchmark": "data-loading", "command": command, "dataset": ds.name,
              "strategy": args.strategy, "git_commit": git_commit(), "machine": machine(),
              "stages": stages, "total_seconds": total, "peak_rss_gib": rss,
              "limits": {"seconds": 60, "rss_gib": 6}}
    stem = Path(args.results_dir) / f"data-loading-{ds.name}-{args.strategy}"
    lines = [f"## Loading {ds.name} (corpus + {args.strategy} split)", "",
             "| stage | items | seconds |", "|---|---|---|"]
    lines += [f"| {k} | {v['count']:,} | {v['seconds']} |" for k, v in stages.items()]
    lines += [f"| **total** | | **{total}** |", "",
              f"Peak RSS {rss} GiB (limits: 60 s, 6 GiB). Machine: {result['machine']['cpu']} "
              f"({result['machine']['cpu_count']} cores). Commit {result['git_commit']}.",
              f"Command: `{command}`", ""]
    write_results(stem, result, "\n".join(lines))
    print("\n".join(lines))
    return 0 if total < 60 and rss < 6 else 1


if __name__ == "__main__":
    sys.exit(main())
