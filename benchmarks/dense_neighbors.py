"""Does a learned neighbour member earn a place in the fusion? `neighbors-cfr` (issue 28)

`neighbors-cfr` (retriever/models/dense_neighbors.py) is `neighbors-tactic` with its nearest
training states found by the trained CFR's state encoder instead of BM25. Rows: each member
alone; the shipped fusion (bm25, usage, locality, neighbors, neighbors-tactic, cfr-conventional,
fitted on random/val statements); the same fusion with neighbors-cfr added, fitted the same way.
The member set is chosen on leandojo-real/select; report is scored once, for the chosen set
against the shipped one. Intervals resample theorems.

    python benchmarks/dense_neighbors.py
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fusion_queries import examples, rankings  # noqa: E402
from benchmarks.ltr_fusion import arguments, half_rows, recall10  # noqa: E402
from prover.data.halves import half_keys  # noqa: E402
from prover.data.jsonio import write_json  # noqa: E402
from prover.utils.runinfo import machine, peak_rss_gib, require_clean_tree  # noqa: E402
from retriever.evaluation.bootstrap import N_RESAMPLES, SEED, paired_intervals  # noqa: E402
from retriever.models.learned_fusion import fit_fusion, order  # noqa: E402

NEW = "neighbors-cfr"
SHIPPED = "fusion (shipped members)"
WITH = "fusion + neighbors-cfr"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default="runs/fusion-queries")
    args = arguments(ap)
    commit = require_clean_tree(False)
    t0 = time.perf_counter()
    from omegaconf import OmegaConf

    from prover.config import load_config
    from retriever.settings import RetrieverTrainConfig
    cfg = load_config(RetrieverTrainConfig, args.config, [f"data.root={args.data}"])
    fc = cfg.fusion
    members = list(fc.members)
    cache = Path(args.cache)
    new_cfg = cfg.copy()
    OmegaConf.update(new_cfg, "fusion.members", [NEW])
    data = {}
    for split in ("random/val", "leandojo-real/val"):
        ranks, queries = rankings(cfg, split, "statement", cache)
        extra, q2 = rankings(new_cfg, split, "statement", cache / NEW)
        assert [q.gold for q in q2] == [q.gold for q in queries]
        data[split] = ([r + e for r, e in zip(ranks, extra)], queries)
    per: dict[str, np.ndarray] = {}
    real_ranks, real_q = data["leandojo-real/val"]
    for name, use in ((SHIPPED, members), (WITH, members + [NEW])):
        ix = [(members + [NEW]).index(m) for m in use]
        fit = examples([[r[i] for i in ix] for r in data["random/val"][0]], data["random/val"][1], fc.depth)
        model = fit_fusion([e[1:3] for e in fit], use, fc.depth, fc.l2)
        real = examples([[r[i] for i in ix] for r in real_ranks], real_q, fc.depth)
        per[name] = np.array([recall10(order(c, model.score(f)), g) for c, f, _, g in real])
    for m in ("neighbors-tactic", "cfr-conventional", NEW):
        i = (members + [NEW]).index(m)
        per[f"{m} alone"] = np.array([recall10(np.asarray(r[i]), set(q.gold)) for r, q in zip(real_ranks, real_q)])
    theorems = [f"{q.file_path}::{q.theorem}" for q in real_q]
    halves = {h: np.array([t in half_keys(f"leandojo-real/{h}") for t in theorems]) for h in ("select", "report")}
    rows = half_rows(per, {"select": halves["select"]}, theorems)
    sel = halves["select"]
    sel_clusters = [t for t, k in zip(theorems, sel) if k]
    d = paired_intervals(per[WITH][sel], per[SHIPPED][sel], clusters=sel_clusters).diff
    select_cmp = {"a": WITH, "b": SHIPPED, "ci": [round(100 * d[0], 1), round(100 * d[1], 1)]}
    d = paired_intervals(per[f"{NEW} alone"][sel], per["neighbors-tactic alone"][sel], clusters=sel_clusters).diff
    alone_cmp = {"a": f"{NEW} alone", "b": "neighbors-tactic alone", "ci": [round(100 * d[0], 1), round(100 * d[1], 1)]}
    chosen = WITH if rows[WITH]["select"]["R@10"] > rows[SHIPPED]["select"]["R@10"] else SHIPPED
    report = {}
    if chosen != SHIPPED:
        rep = halves["report"]
        clusters = [t for t, k in zip(theorems, rep) if k]
        report = {n: v["report"] for n, v in half_rows({n: per[n] for n in (WITH, SHIPPED)}, {"report": rep},
                                                      theorems).items()}
        d = paired_intervals(per[WITH][rep], per[SHIPPED][rep], clusters=clusters).diff
        report["comparison"] = {"a": WITH, "b": SHIPPED, "ci": [round(100 * d[0], 1), round(100 * d[1], 1)]}
    res = {"benchmark": "dense-neighbors", "command": "python " + " ".join(sys.argv), "git_commit": commit,
           "machine": machine(), "members": members, "depth": fc.depth, "l2": fc.l2, "fitted_on": "random/val",
           "n_queries": {h: int(m.sum()) for h, m in halves.items()},
           "n_theorems": {h: len({t for t, k in zip(theorems, m) if k}) for h, m in halves.items()},
           "bootstrap": {"resamples": N_RESAMPLES, "seed": SEED, "paired_over": "theorems"},
           "rows": rows, "select_comparisons": [select_cmp, alone_cmp], "chosen_on_select": chosen, "report": report,
           "budget": f"CPU seconds {round(time.perf_counter() - t0)} here (rankings cached in {args.cache}; the "
                     "training states' CFR vectors beside the CFR model), beyond the members' own training",
           "peak_rss_gib": round(peak_rss_gib(), 2)}
    stem = Path("benchmarks/results") / "dense-neighbors-mathlib-src"
    write_json(stem.with_suffix(".json"), res)
    stem.with_suffix(".md").write_text(markdown(res))
    print(markdown(res))


def markdown(res: dict) -> str:
    L = ["# neighbors-cfr: the nearest training states by CFR's state encoder, inside the fusion", "",
         f"Shipped fusion: logistic regression over {', '.join(res['members'])} (top {res['depth']} each), fitted on "
         f"{res['fitted_on']}; `+ neighbors-cfr` adds the new member, fitted the same way. Select: "
         f"{res['n_queries']['select']} queries of {res['n_theorems']['select']} theorems (the choice); report: "
         f"{res['n_queries']['report']} of {res['n_theorems']['report']}, scored once for the chosen set. Brackets: "
         "95% bootstrap intervals resampling theorems.", "", "| row | select R@10 |", "|---|---|"]
    L += [f"| {n} | {v['select']['R@10']} {v['select']['ci']} |" for n, v in res["rows"].items()]
    L += ["", "Paired on select (points):", "", "| a | b | a − b |", "|---|---|---|"]
    L += [f"| {c['a']} | {c['b']} | {c['ci']} |" for c in res["select_comparisons"]]
    L += ["", f"Chosen on select: **{res['chosen_on_select']}**."]
    if res["report"]:
        rep = res["report"]
        L += ["", "On report (scored once):", "", "| row | report R@10 |", "|---|---|"]
        L += [f"| {n} | {v['R@10']} {v['ci']} |" for n, v in rep.items() if n != "comparison"]
        c = rep["comparison"]
        L += ["", f"{c['a']} − {c['b']} on report: {c['ci']} points."]
    else:
        L += ["", "The shipped members stay; report is not scored again."]
    L += ["", f"Commit {res['git_commit']}; {res['budget']}. Command: `{res['command']}`"]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
