"""Choose CAR's inference settings on a validation split: how many first-stage candidates it
re-ranks (`car.k1`) and how much of the first stage's score it keeps (`car.first_stage_weight`).

    python benchmarks/car_fusion.py --config configs/retrieval/benchmark_cpu.yaml \
        --retriever cfr-conventional+car data.split=random/val

Every (k1, weight) pair is scored with the benchmark's own evaluation, on the split named in the
config (a validation split: settings picked on test would flatter the test row). CAR logits are
computed once per (state, premise) and reused across pairs, so the sweep costs about one
re-ranking at the largest k1. Writes benchmarks/results/car-fusion-<dataset>-<split>[-tag].{json,md}
and prints the best pair by the chosen metric; copy it into the training config.
"""
from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import (add_allow_dirty, load_config, machine, parser, require_clean_tree,
                                         to_plain, write_results)
from prover.data.dataset import Dataset
from prover.data.pairs import premise_queries
from prover.data.premise import Premise
from prover.utils.logs import setup_logging
from retriever.evaluation.benchmark import results_stem
from retriever.evaluation.evaluate import evaluate
from retriever.models.car import CARScorer, RerankRetriever
from retriever.registry import build_retriever
from retriever.settings import RetrievalBenchmarkConfig

log = logging.getLogger("car_fusion")


class CachedScorer:
    """A CARScorer whose logits are remembered per (state, premise), so re-ranking the same
    candidates under other settings costs nothing."""

    def __init__(self, scorer: CARScorer) -> None:
        self.scorer = scorer
        self.cache: dict[tuple[str, str], float] = {}

    def score(self, states: Sequence[str], premises: Sequence[Premise]) -> np.ndarray:
        keys = [(s, p.full_name) for s, p in zip(states, premises)]
        todo = [i for i, key in enumerate(keys) if key not in self.cache]
        if todo:
            fresh = self.scorer.score([states[i] for i in todo], [premises[i] for i in todo])
            self.cache.update({keys[i]: float(v) for i, v in zip(todo, fresh)})
        return np.array([self.cache[key] for key in keys], dtype=np.float32)


def sweep(rr: RerankRetriever, queries, k1s: Sequence[int], weights: Sequence[float], cfg) -> list[dict]:
    """Metrics of `rr` for every (k1, weight), largest k1 first so later ones hit the cache."""
    rr.scorer = CachedScorer(rr.scorer)
    rows = [{"k1": 0, "first_stage_weight": None, "metrics": evaluate(
        rr.first_stage, queries, ks=cfg.eval.ks, rankings_k=cfg.eval.rankings_k,
        batch_size=cfg.eval.batch_size).metrics}]  # k1 0: the first stage alone
    for k1 in sorted(k1s, reverse=True):
        for w in weights:
            rr.k1, rr.first_stage_weight = k1, w
            t0 = time.perf_counter()
            res = evaluate(rr, queries, ks=cfg.eval.ks, rankings_k=cfg.eval.rankings_k,
                           batch_size=cfg.eval.batch_size)
            rows.append({"k1": k1, "first_stage_weight": w, "metrics": res.metrics,
                         "seconds": round(time.perf_counter() - t0, 2)})
            log.info("k1 %d, w %.2f: R@10 %.4f MRR %.4f", k1, w, res.metrics["R@10"], res.metrics["MRR"])
    return rows


def markdown(result: dict, metric: str) -> str:
    cols = ["R@1", "R@5", "R@10", "nDCG@10", "MRR"]
    lines = [f"## CAR inference settings: {result['retriever']} on {result['dataset']} {result['split']}", "",
             "| k1 | first_stage_weight | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
    for r in result["rows"]:
        w = "" if r["first_stage_weight"] is None else f"{r['first_stage_weight']:g}"
        k1 = "first stage alone" if r["k1"] == 0 else str(r["k1"])
        cells = [f"{r['metrics'][c]:.3f}" if c.startswith(("nDCG", "MRR")) else f"{100 * r['metrics'][c]:.1f}"
                 for c in cols]
        lines.append(f"| {k1} | {w} | " + " | ".join(cells) + " |")
    best = result["best"]
    return "\n".join(lines) + (
        f"\n\nBest by {metric}: k1 {best['k1']}, first_stage_weight {best['first_stage_weight']:g}. "
        f"{result['n_queries']} queries. Commit {result['git_commit']}.\n"
        f"Command: `{result['command']}`\n")


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default=None, help="a retrieval benchmark config (data, retriever.models)")
    p.add_argument("--retriever", default="cfr+car", help="a registered re-ranking retriever")
    p.add_argument("--k1", default="10,20,40", help="comma-separated candidate counts")
    p.add_argument("--weights", default="0,0.5,1,2,4", help="comma-separated first-stage weights")
    p.add_argument("--metric", default="R@10", help="what 'best' means")
    add_allow_dirty(p)
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)  # before any work: a refused run costs nothing
    setup_logging()
    cfg = load_config(RetrievalBenchmarkConfig, args.config, args.overrides)
    if "test" in cfg.data.split:
        log.warning("choosing settings on %s: pick them on a validation split instead", cfg.data.split)
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()
    queries, _ = premise_queries(ds.theorems(cfg.data.split), corpus, ds.skips)
    rr = build_retriever(args.retriever, corpus, cfg)
    if not isinstance(rr, RerankRetriever):
        p.error(f"{args.retriever} is not a re-ranking retriever")
    t0 = time.perf_counter()
    rows = sweep(rr, queries, [int(x) for x in args.k1.split(",")],
                 [float(x) for x in args.weights.split(",")], cfg)
    best = max(rows[1:], key=lambda r: r["metrics"][args.metric])
    result = {"benchmark": "car-fusion", "retriever": args.retriever, "dataset": ds.name,
              "split": cfg.data.split, "n_queries": len(queries), "metric": args.metric,
              "command": " ".join(["python benchmarks/car_fusion.py", *(argv if argv is not None else sys.argv[1:])]),
              "config": to_plain(cfg), "git_commit": commit, "machine": machine(),
              "seconds": round(time.perf_counter() - t0, 2), "rows": rows, "best": best}
    stem = "car-fusion-" + results_stem(ds, cfg.data.split, cfg.results_tag).removeprefix("retrieval-")
    out = Path(cfg.results_dir)
    write_results(out / stem, result, markdown(result, args.metric))
    print(markdown(result, args.metric))
    return 0


if __name__ == "__main__":
    sys.exit(main())
