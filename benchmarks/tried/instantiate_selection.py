"""Premise-instantiated neighbour tactics (generator/tried/instantiate.py): chosen on select, scored on report.

No network: the candidates are the tactics of the nearest training states, plus those tactics
with their one premise replaced by the premises shown for the state (none, the gold ones, or a
retriever's top m). Every setting is chosen on `leandojo-real/select` by EM@8 of the shipping
retriever's row; `leandojo-real/report` is scored once with the chosen settings. Intervals
resample theorems. The neighbours index the tactic-level steps of mathlib-src random/train (the
real theorems are not in it, and every evaluated theorem is left out all the same).

    python benchmarks/tried/instantiate_selection.py [--retriever bm25+usage+neighbors-tactic]
"""
from __future__ import annotations

import itertools
import logging
import os
import time
from pathlib import Path

import numpy as np

from generator.evaluate import condition_premises, eval_examples
from generator.inputs import normalize_tactic
from generator.tried.instantiate import InstantiateConfig, instantiated
from generator.neighbors import TacticNeighbors
from generator.settings import NeighborsConfig
from prover.benchmarking.harness import (N_RESAMPLES, SEED, command_line, git_commit, machine, mean_interval,
                                         paired_intervals, parser, peak_rss_gib, write_and_print)
from prover.data.dataset import Dataset
from prover.data.tactic_steps import tactic_level

N = 8  # EM@8, as the generator benchmark
NEIGHBOR_GRID = [(20, 3.0), (50, 3.0), (50, 10.0)]  # (k, temperature)
GRID = [InstantiateConfig(m, 0.5, w) for m, w in itertools.product((1, 3, 5), (0.2, 0.4, 0.6))]
MAX_TARGET_BYTES = 128  # the cpu generator's target budget: the tactics it is trained on


def hits(ranked: dict[str, float], gold: str) -> float:
    return float(normalize_tactic(gold) in [normalize_tactic(t) for t in list(ranked)[:N]])


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--retriever", default="bm25+usage+neighbors-tactic",
                    help="the retriever whose premises fill templates (the row settings are chosen by)")
    ap.add_argument("--data", default=os.environ.get("PROVER_DATA", "../shared/data") + "/mathlib-src")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    t0 = time.perf_counter()
    ds = Dataset(args.data)
    corpus = ds.corpus()
    steps, _ = tactic_level(ds.theorems("random/train"), MAX_TARGET_BYTES)
    neighbors = TacticNeighbors.build(steps, corpus, NeighborsConfig(k=max(k for k, _ in NEIGHBOR_GRID)))
    halves = {h: eval_examples(ds.theorems(f"leandojo-real/{h}"), corpus) for h in ("select", "report")}
    neighbors.exclude({f"{e.file_path}::{e.theorem}" for ex in halves.values() for e in ex})
    build_s = time.perf_counter() - t0

    from prover.config import DataConfig
    from retriever.registry import build_retriever
    from retriever.settings import RetrieverConfig
    retriever = build_retriever(args.retriever, corpus, RetrieverConfig(name=args.retriever),
                                data=DataConfig(root=args.data, split="leandojo-real/val"))
    conditions = ["none", "gold", args.retriever]
    shown = {h: {c: [[p.full_name for p in ps] for ps in
                     condition_premises(c, ex, corpus, retriever if c == args.retriever else None, 5)]
                 for c in conditions} for h, ex in halves.items()}
    near = {h: [neighbors.nearest_states(e.state, max(k for k, _ in NEIGHBOR_GRID)) for e in ex]
            for h, ex in halves.items()}

    def outcomes(half: str, cond: str, k: int, temp: float, cfg: InstantiateConfig) -> np.ndarray:
        neighbors.cfg = NeighborsConfig(k=k, temperature=temp)
        return np.array([hits(instantiated(neighbors, n[:k], s if cond != "none" else [], cfg), e.tactic)
                         for e, n, s in zip(halves[half], near[half], shown[half][cond])])

    tried = []
    for (k, temp), cfg in itertools.product(NEIGHBOR_GRID, GRID):
        r = outcomes("select", args.retriever, k, temp, cfg)
        tried.append({"k": k, "temperature": temp, "m": cfg.m, "decay": cfg.decay, "weight": cfg.weight,
                      "select EM@8": round(100 * float(r.mean()), 2)})
    best = max(tried, key=lambda row: row["select EM@8"])  # the first best, in grid order
    k, temp = best["k"], best["temperature"]
    chosen = InstantiateConfig(best["m"], best["decay"], best["weight"])
    rows, comps = {}, []
    clusters = {h: [f"{e.file_path}::{e.theorem}" for e in ex] for h, ex in halves.items()}
    per = {}
    for half in ("select", "report"):
        for cond in conditions:
            v = outcomes(half, cond, k, temp, chosen)
            per[half, cond] = v
            lo, hi = mean_interval(v, clusters=clusters[half])
            rows.setdefault(cond, {})[half] = {"EM@8": round(100 * float(v.mean()), 1),
                                               "ci": [round(100 * lo, 1), round(100 * hi, 1)]}
    for a in ("gold", args.retriever):
        d = paired_intervals(per["report", a], per["report", "none"], clusters=clusters["report"]).diff
        comps.append({"a": a, "b": "none (the neighbours alone)", "ci": [round(100 * d[0], 1), round(100 * d[1], 1)]})
    res = {"benchmark": "instantiate-selection", "command": command_line(), "git_commit": git_commit(),
           "machine": machine(), "data": args.data, "retriever": args.retriever,
           "n_examples": {h: len(ex) for h, ex in halves.items()},
           "n_theorems": {h: len(set(c)) for h, c in clusters.items()},
           "neighbors": {"train": "tactic-level mathlib-src random/train", "states": len(neighbors.tactics),
                         "templates": sum(len(p) == 1 for p in neighbors.premises)},
           "grid": tried, "chosen": best, "rows": rows, "report_comparisons": comps,
           "bootstrap": {"resamples": N_RESAMPLES, "seed": SEED, "paired_over": "theorems"},
           "budget": "no training; CPU seconds: " + str(round(time.perf_counter() - t0)),
           "build_seconds": round(build_s, 1), "peak_rss_gib": round(peak_rss_gib(), 2)}
    stem = Path("benchmarks/results") / "instantiate-selection-mathlib-src"
    write_and_print(stem, res, markdown)


def markdown(res: dict) -> str:
    b = res["chosen"]
    L = ["# Premise-instantiated neighbour tactics (no network)", "",
         f"`{res['command']}` at commit {res['git_commit']}; {res['budget']}. Candidates: the tactics of the "
         f"nearest training states ({res['neighbors']['states']} tactic-level steps of random/train, "
         f"{res['neighbors']['templates']} of them naming exactly one premise) and those tactics with their "
         f"premise replaced by each of the top m premises shown. {len(res['grid'])} settings tried on "
         f"leandojo-real/select ({res['n_examples']['select']} real tactics of {res['n_theorems']['select']} "
         f"theorems), chosen by EM@8 of the `{res['retriever']}` row: k {b['k']}, temperature "
         f"{b['temperature']}, m {b['m']}, decay {b['decay']}, weight {b['weight']} ({b['select EM@8']}). "
         f"Report: {res['n_examples']['report']} tactics of {res['n_theorems']['report']} theorems, scored once. "
         f"Brackets: 95% bootstrap intervals, {res['bootstrap']['resamples']} resamples of the theorems.", "",
         "| premises shown | select EM@8 | report EM@8 |", "|---|---|---|"]
    for cond, v in res["rows"].items():
        label = "none (the neighbours alone)" if cond == "none" else cond
        L.append(f"| {label} | {v['select']['EM@8']} {v['select']['ci']} | {v['report']['EM@8']} {v['report']['ci']} |")
    L += ["", "Paired on report (points):", "", "| a | b | a − b |", "|---|---|---|"]
    for c in res["report_comparisons"]:
        L.append(f"| {c['a']} | {c['b']} | {c['ci']} |")
    L += ["", "Settings tried on select (EM@8 of the retriever row):", "",
          "| k | temperature | m | weight | select EM@8 |", "|---|---|---|---|---|"]
    for row in res["grid"]:
        L.append(f"| {row['k']} | {row['temperature']} | {row['m']} | {row['weight']} | {row['select EM@8']} |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
