"""Learning to rank the fusion's candidates: LambdaMART (LightGBM) against today's logistic regression.

Same members for every row, and none of them learned (bm25, usage, locality, neighbors,
neighbors-tactic), so this measures the ranker and nothing else: the shipped fusion adds
conventional CFR, whose training this session could not afford. Rows:
- `logistic, ranks`: today's recipe (retriever/models/learned_fusion.py) on these members;
- `logistic, ranks + premise`: the same with what a premise has on its own (same file as the
  query, log of how often training proofs used it, log of its statement's length, its kind);
- `lambdamart, ranks + premise`: LightGBM's lambdarank over the same features.
Every model is fitted on random/val (statement level, as train-fusion fits); LambdaMART's size
(trees, leaves) is chosen on leandojo-real/select; leandojo-real/report is scored once. Intervals
resample theorems.

    python benchmarks/tried/ltr_fusion.py
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from prover.benchmarking.tried.fusion_halves import (DEPTH, MEMBERS, arguments, examples, fusion_config, half_rows,
                                               rankings, recall10, split_fields)
from prover.benchmarking.harness import (command_line, git_commit, machine, paired_intervals, parser,
                                         peak_rss_gib, write_and_print)
from prover.data.dataset import Dataset
from prover.data.halves import half_keys
from prover.data.pairs import gold_indices
from retriever.models.learned_fusion import fit_fusion, order

LAMBDAMART_GRID = [(n, leaves) for n in (100, 300) for leaves in (15, 63)]


def main() -> None:
    args = arguments(parser(__doc__))
    import lightgbm as lgb
    t0 = time.perf_counter()
    cfg = fusion_config(args)
    ds = Dataset(args.data)
    corpus = ds.corpus()
    usage = np.zeros(len(corpus.premises))
    for thm in ds.theorems("random/train"):
        for tac in thm.traced_tactics:
            for i in gold_indices(tac, corpus):
                usage[i] += 1
    cache = Path("runs/ltr-fusion")
    fit = rankings(cfg, "random/val", cache)
    real = rankings(cfg, "leandojo-real/val", cache)
    halves = {h: np.array([t in half_keys(f"leandojo-real/{h}") for t in real[2]]) for h in ("select", "report")}
    rank_s = time.perf_counter() - t0

    per = {}  # row -> per-query R@10 on real val
    fit_rank, fit_full = (examples(*fit[:2], corpus, usage, w) for w in (False, True))
    real_rank, real_full = (examples(*real[:2], corpus, usage, w) for w in (False, True))
    for name, train, test in (("logistic, ranks", fit_rank, real_rank),
                              ("logistic, ranks + premise", fit_full, real_full)):
        model = fit_fusion([e[1:3] for e in train], MEMBERS, DEPTH, cfg.fusion.l2)
        per[name] = np.array([recall10(order(c, model.score(f)), g) for c, f, _, g in test])
    x = np.concatenate([e[1] for e in fit_full])
    y = np.concatenate([e[2] for e in fit_full]).astype(int)
    group = [len(e[0]) for e in fit_full]
    tried = []
    scores_by = {}
    for n, leaves in LAMBDAMART_GRID:
        params = {"objective": "lambdarank", "num_leaves": leaves, "learning_rate": 0.05, "min_data_in_leaf": 20,
                  "seed": 0, "deterministic": True, "num_threads": 2, "verbose": -1}
        ranker = lgb.train(params, lgb.Dataset(x, y, group=group), num_boost_round=n)
        r = np.array([recall10(order(c, ranker.predict(f)), g) for c, f, _, g in real_full])
        scores_by[n, leaves] = r
        tried.append({"trees": n, "leaves": leaves, "select R@10": round(100 * float(r[halves["select"]].mean()), 2)})
    best = max(tried, key=lambda t: t["select R@10"])
    per["lambdamart, ranks + premise"] = scores_by[best["trees"], best["leaves"]]
    # The shipped fusion: these members plus conventional CFR, the same logistic regression fitted
    # on random/val (its committed rankings): against `logistic, ranks` it is CFR's part in it.
    from retriever.evaluation.evaluate import per_query_from_rankings
    shipped = Path("benchmarks/results/rankings/retrieval-mathlib-src-leandojo-real-val-cpu-fusion.jsonl.gz")
    keys, values = per_query_from_rankings(shipped)
    if [(q.theorem, q.tactic_index) for q in real[1]] == keys:
        per["shipped fusion (these members + cfr-conventional)"] = values["R@10"]
    for m, name in enumerate(MEMBERS):  # each member alone, for scale
        per[name] = np.array([recall10(np.asarray(r[m]), set(q.gold)) for r, q in zip(real[0], real[1])])

    rows = half_rows(per, halves, real[2])
    mask = halves["report"]
    clusters = [t for t, k in zip(real[2], mask) if k]
    comps = []
    for a, b in (("logistic, ranks + premise", "logistic, ranks"), ("lambdamart, ranks + premise", "logistic, ranks"),
                 ("lambdamart, ranks + premise", "logistic, ranks + premise"),
                 ("shipped fusion (these members + cfr-conventional)", "logistic, ranks")):
        if a not in per:
            continue
        d = paired_intervals(per[a][mask], per[b][mask], clusters=clusters).diff
        comps.append({"a": a, "b": b, "ci": [round(100 * d[0], 1), round(100 * d[1], 1)]})
    res = {"benchmark": "ltr-fusion", "command": command_line(), "git_commit": git_commit(),
           "machine": machine(), **split_fields(halves, real[2]), "n_fit_queries": len(fit[1]),
           "lambdamart_grid": tried, "chosen": best, "rows": rows, "report_comparisons": comps,
           "budget": f"no network; CPU seconds {round(time.perf_counter() - t0)} (member rankings {round(rank_s)})",
           "peak_rss_gib": round(peak_rss_gib(), 2)}
    stem = Path("benchmarks/results") / "ltr-fusion-mathlib-src"
    write_and_print(stem, res, markdown)


def markdown(res: dict) -> str:
    b = res["chosen"]
    L = ["# Learning to rank the fusion's candidates (no-learning members)", "",
         f"`{res['command']}` at commit {res['git_commit']}; {res['budget']}. Members: {', '.join(res['members'])} "
         f"(top {res['depth']} each). Every ranker is fitted on random/val ({res['n_fit_queries']} queries). "
         f"LambdaMART's size chosen on leandojo-real/select ({res['n_queries']['select']} queries of "
         f"{res['n_theorems']['select']} theorems): {b['trees']} trees of {b['leaves']} leaves. Report: "
         f"{res['n_queries']['report']} queries of {res['n_theorems']['report']} theorems, scored once. "
         "Brackets: 95% bootstrap intervals resampling theorems.", "",
         "| row | select R@10 | report R@10 |", "|---|---|---|"]
    for name, v in res["rows"].items():
        L.append(f"| {name} | {v['select']['R@10']} {v['select']['ci']} | {v['report']['R@10']} {v['report']['ci']} |")
    L += ["", "Paired on report (points):", "", "| a | b | a − b |", "|---|---|---|"]
    L += [f"| {c['a']} | {c['b']} | {c['ci']} |" for c in res["report_comparisons"]]
    L += ["", "LambdaMART sizes tried on select:", "", "| trees | leaves | select R@10 |", "|---|---|---|"]
    L += [f"| {t['trees']} | {t['leaves']} | {t['select R@10']} |" for t in res["lambdamart_grid"]]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
