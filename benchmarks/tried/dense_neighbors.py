"""Does a learned neighbour member earn a place in the fusion? `neighbors-cfr` (issue 28)

`neighbors-cfr` (retriever/tried/dense_neighbors.py) is `neighbors-tactic` with its nearest
training states found by the trained CFR's state encoder instead of BM25. Rows: each member
alone; the shipped fusion (bm25, usage, locality, neighbors, neighbors-tactic, cfr-conventional,
fitted on random/val statements); the same fusion with neighbors-cfr added, fitted the same way.
The member set is chosen on leandojo-real/select; report is scored once, for the chosen set
against the shipped one. Intervals resample theorems.

    python benchmarks/tried/dense_neighbors.py
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from prover.benchmarking.tried.fusion_halves import half_rows, recall10
from prover.benchmarking.tried.fusion_refits import (choose_on_select, examples, halves_fields, halves_of, halves_text,
                                               markdown_tail, paired, rankings, report_once, start)
from prover.benchmarking.harness import command_line, machine, peak_rss_gib, write_and_print
from retriever.models.learned_fusion import fit_fusion, order

NEW = "neighbors-cfr"
SHIPPED = "fusion (shipped members)"
WITH = "fusion + neighbors-cfr"


def main() -> None:
    args, commit, t0, cfg = start(__doc__)
    from omegaconf import OmegaConf
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
    halves = halves_of(theorems)
    rows = half_rows(per, {"select": halves["select"]}, theorems)
    select_cmp = [paired(per, WITH, SHIPPED, halves["select"], theorems),
                  paired(per, f"{NEW} alone", "neighbors-tactic alone", halves["select"], theorems)]
    chosen, why = choose_on_select(per, [SHIPPED, WITH], SHIPPED, halves, theorems)
    res = {"benchmark": "dense-neighbors", "command": command_line(), "git_commit": commit,
           "machine": machine(), "members": members, "depth": fc.depth, "l2": fc.l2, "fitted_on": "random/val",
           **halves_fields(halves, theorems), "rows": rows, "select_comparisons": select_cmp,
           "chosen_on_select": chosen, "chosen_why": why, "report": report_once(per, chosen, SHIPPED, halves, theorems),
           "budget": f"CPU seconds {round(time.perf_counter() - t0)} here (rankings cached in {args.cache}; the "
                     "training states' CFR vectors beside the CFR model), beyond the members' own training",
           "peak_rss_gib": round(peak_rss_gib(), 2)}
    write_and_print(Path("benchmarks/results") / "dense-neighbors-mathlib-src", res, markdown)


def markdown(res: dict) -> str:
    L = ["# neighbors-cfr: the nearest training states by CFR's state encoder, inside the fusion", "",
         f"Shipped fusion: logistic regression over {', '.join(res['members'])} (top {res['depth']} each), fitted on "
         f"{res['fitted_on']}; `+ neighbors-cfr` adds the new member, fitted the same way. " + halves_text(res, "set")]
    return "\n".join(L + markdown_tail(res, "row", "The shipped members stay")) + "\n"


if __name__ == "__main__":
    main()
