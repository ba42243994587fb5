"""Premise retrieval benchmark: every listed retriever side by side on one split.

    python benchmarks/retrieval.py --config configs/retrieval/benchmark_mathlib.yaml
    python benchmarks/retrieval.py --config configs/retrieval/benchmark_mathlib.yaml data.split=novel_premises/test

Writes benchmarks/results/retrieval-<dataset>-<split>.{json,md} and per-query rankings under
benchmarks/results/rankings/. Rows already in the JSON are kept (resume); --force redoes them.
Each row records its own commit, command and config. A tree with uncommitted changes to code or
configs is refused unless --allow-dirty, and rows written from one are marked dirty.
A row built on a model its time budget stopped before its planned step is refused unless
--allow-partial, and rows written from one are marked partial.
"""
from __future__ import annotations

import sys

from prover.benchmarking.harness import add_run_flags, load_config, parser, require_clean_tree
from prover.utils.logs import setup_logging
from retriever.evaluation.benchmark import run_retrieval_benchmark
from retriever.evaluation.evaluate import markdown_table
from retriever.settings import RetrievalBenchmarkConfig


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default=None)
    p.add_argument("--force", action="store_true", help="recompute the named rows already in the results file (the others stay)")
    add_run_flags(p, "score models their time budget stopped before the planned step; their rows are marked partial")
    args = p.parse_args(argv)
    require_clean_tree(args.allow_dirty)  # before any work: a refused run costs nothing
    setup_logging()
    cfg = load_config(RetrievalBenchmarkConfig, args.config, args.overrides)
    command = " ".join(["python benchmarks/retrieval.py", *(["--config", args.config] if args.config else []),
                        *args.overrides])
    result = run_retrieval_benchmark(cfg, force=args.force, command=command, allow_partial=args.allow_partial)
    print(markdown_table(result["rows"], f"{result['dataset']} {result['split']}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
