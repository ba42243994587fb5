"""Accessibility-filtered search on the flat index, side by side: scanning every premise vector
(`PremiseIndex.scan_masked`, the CPU default) against filtering a growing faiss candidate pool
(`PremiseIndex.pool_masked`, the GPU way).

    python benchmarks/tried/masked_search.py --config configs/retrieval/benchmark_cpu.yaml

For each CFR retriever listed, states of the split are encoded once; then each method answers
the same queries (top `k` accessible premises) one at a time (p50/p95 ms) and in batches of 64
(queries/s), and the two answers are compared. Also timed: the state encoder
and the accessibility mask at batch 1, the other parts of a CFR query. Writes
benchmarks/results/masked-search-<dataset>-<split>[-tag].{json,md}.
"""
from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import git_commit, load_config, machine, parser, to_plain, write_and_print
from prover.data.dataset import Dataset
from prover.data.pairs import premise_queries
from prover.utils.logs import setup_logging
from prover.utils.progress import progress_bar
from retriever.evaluation.benchmark import results_stem
from retriever.models.cfr import CFRRetriever
from retriever.registry import build_retriever
from retriever.settings import RetrievalBenchmarkConfig

log = logging.getLogger("masked_search")


def per_call_ms(calls: list[Callable[[], object]], desc: str) -> np.ndarray:
    times = []
    for call in progress_bar(calls, desc=desc, unit="query", leave=False):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return np.array(times) * 1000


def stats(ms: np.ndarray) -> dict:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def compare(r: CFRRetriever, queries, n: int, k: int, batch: int) -> dict:
    """Time encoder, mask and both search methods on the first n queries of `queries`."""
    qs = queries[:n]
    masks = [r.corpus.accessible_mask(q.file_path, q.position) for q in qs]
    vectors = r.encode_states([q.state for q in qs])
    row = {"retriever": r.name, "n_premises": len(r.corpus), "dim": int(vectors.shape[1]), "queries": len(qs),
           "encode_batch1": stats(per_call_ms([lambda q=q: r.encode_states([q.state]) for q in qs], "encode")),
           "mask_batch1": stats(per_call_ms([lambda q=q: r.corpus.accessible_mask(q.file_path, q.position)
                                             for q in qs], "mask"))}
    answers = {}
    for method in ("scan_masked", "pool_masked"):
        search = getattr(r.index, method)
        ms = per_call_ms([lambda i=i: search(vectors[i: i + 1], k, masks[i: i + 1]) for i in range(len(qs))], method)
        t0 = time.perf_counter()
        answers[method] = [hit for lo in range(0, len(qs), batch)
                           for hit in search(vectors[lo: lo + batch], k, masks[lo: lo + batch])]
        row[method] = stats(ms) | {f"queries_per_s_batch{batch}": round(len(qs) / (time.perf_counter() - t0), 1)}
    pairs = list(zip(answers["scan_masked"], answers["pool_masked"]))
    # Both are exact up to float rounding: a matrix product and a matrix-vector product may
    # differ in the last bit, which can swap two premises whose scores agree to 1e-7.
    row["identical_rankings"] = sum(np.array_equal(a[1], b[1]) for a, b in pairs)
    row["max_score_difference"] = float(max(np.abs(a[0] - b[0]).max(initial=0.0) for a, b in pairs))
    row["speedup_batch1_p50"] = round(row["pool_masked"]["p50_ms"] / row["scan_masked"]["p50_ms"], 2)
    return row


def markdown(result: dict) -> str:
    b = result["batch"]
    lines = [f"## Masked flat search: {result['dataset']} {result['split']}, top {result['k']} accessible", "",
             f"| retriever | method | p50 ms | p95 ms | queries/s at batch {b} |", "|---|---|---|---|---|"]
    for row in result["rows"]:
        for part in ("encode_batch1", "mask_batch1"):
            lines.append(f"| {row['retriever']} | {part.removesuffix('_batch1')} (batch 1) | "
                         f"{row[part]['p50_ms']} | {row[part]['p95_ms']} | |")
        for method in ("pool_masked", "scan_masked"):
            m = row[method]
            lines.append(f"| {row['retriever']} | search: {method} | {m['p50_ms']} | {m['p95_ms']} | "
                         f"{m[f'queries_per_s_batch{b}']} |")
    lines.append("")
    for row in result["rows"]:
        lines.append(f"- {row['retriever']}: {row['n_premises']} premises × {row['dim']} dims, {row['queries']} "
                     f"queries; identical rankings for {row['identical_rankings']} of them, scores at equal "
                     f"ranks within {row['max_score_difference']:.1e}; "
                     f"batch-1 p50 speedup of the scan {row['speedup_batch1_p50']}×.")
    return "\n".join(lines) + (f"\n\nMachine: {result['machine']['cpu']} ({result['machine']['cpu_count']} cores). "
                               f"Commit {result['git_commit']}.\nCommand: `{result['command']}`\n")


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default=None, help="a retrieval benchmark config (data, retriever.models)")
    p.add_argument("--retrievers", default="cfr-conventional,cfr", help="comma-separated CFR retrievers")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--k", type=int, default=100, help="premises per query (the latency column's k)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = p.parse_args(argv)
    setup_logging()
    cfg = load_config(RetrievalBenchmarkConfig, args.config, args.overrides)
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
    corpus = ds.corpus()
    queries, _ = premise_queries(ds.theorems(cfg.data.split), corpus, ds.skips)
    rows = []
    for name in args.retrievers.split(","):
        r = build_retriever(name, corpus, cfg)
        if not isinstance(r, CFRRetriever) or not r.index.exact:
            p.error(f"{name} is not a CFR retriever over a flat index")
        log.info("%s: timing %d queries", name, args.queries)
        rows.append(compare(r, queries, args.queries, args.k, args.batch))
    result = {"benchmark": "masked-search", "dataset": ds.name, "split": cfg.data.split, "k": args.k,
              "batch": args.batch,
              "command": " ".join(["python benchmarks/tried/masked_search.py", *(argv if argv is not None else sys.argv[1:])]),
              "config": to_plain(cfg), "git_commit": git_commit(), "machine": machine(), "rows": rows}
    stem = "masked-search-" + results_stem(ds, cfg.data.split, cfg.results_tag).removeprefix("retrieval-")
    write_and_print(Path(cfg.results_dir) / stem, result, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
