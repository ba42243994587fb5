"""Which queries should the fusion be fitted on: statements, or tactic-level steps? (issue 28)

The shipped fusion (configs/retriever/cpu.yaml: a logistic regression over the ranks of bm25,
usage, locality, neighbors, neighbors-tactic and conventional CFR) is fitted on random/val's
statement-level queries: one per theorem, its initial goal. Proof search asks about mid-proof
states. `fusion.granularity=tactic` fits it on the same theorems split into tactic-level steps
(prover/data/tactic_steps.py: each step's state with the premises its own tactic uses), which
look more like them. Rows: fitted on statements (the shipped recipe), on steps, on both. The
recipe is chosen on leandojo-real/select; report is scored once, for the chosen one against the
shipped one. Intervals resample theorems.

    python benchmarks/tried/fusion_queries.py
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

RECIPES = {"statements (shipped)": ("statement",), "steps": ("tactic",), "statements + steps": ("statement", "tactic")}
SHIPPED = "statements (shipped)"


def main() -> None:
    args, commit, t0, cfg = start(__doc__)
    fc = cfg.fusion
    cache = Path(args.cache)
    fit = {g: examples(*rankings(cfg, "random/val", g, cache), fc.depth) for g in ("statement", "tactic")}
    ranks, queries = rankings(cfg, "leandojo-real/val", "statement", cache)
    real = examples(ranks, queries, fc.depth)
    theorems = [f"{q.file_path}::{q.theorem}" for q in queries]
    halves = halves_of(theorems)
    per: dict[str, np.ndarray] = {}
    for name, grans in RECIPES.items():
        model = fit_fusion([e[1:3] for g in grans for e in fit[g]], list(fc.members), fc.depth, fc.l2)
        per[name] = np.array([recall10(order(c, model.score(f)), g) for c, f, _, g in real])
    per["best no-learning member alone: neighbors-tactic"] = np.array(
        [recall10(np.asarray(r[list(fc.members).index("neighbors-tactic")]), set(q.gold)) for r, q in zip(ranks, queries)])
    rows = half_rows(per, {"select": halves["select"]}, theorems)
    chosen, why = choose_on_select(per, list(RECIPES), SHIPPED, halves, theorems)
    select_cmp = [paired(per, name, SHIPPED, halves["select"], theorems) for name in RECIPES if name != SHIPPED]
    res = {"benchmark": "fusion-queries", "command": command_line(), "git_commit": commit,
           "machine": machine(), "members": list(fc.members), "depth": fc.depth, "l2": fc.l2,
           "fit_queries": {g: len(fit[g]) for g in fit}, **halves_fields(halves, theorems),
           "rows": rows, "select_comparisons": select_cmp, "chosen_on_select": chosen,
           "chosen_why": why, "report": report_once(per, chosen, SHIPPED, halves, theorems),
           "budget": f"CPU seconds {round(time.perf_counter() - t0)} here (member rankings cached in {args.cache}), "
                     "beyond the members' own training", "peak_rss_gib": round(peak_rss_gib(), 2)}
    write_and_print(Path("benchmarks/results") / "fusion-queries-mathlib-src", res, markdown)


def markdown(res: dict) -> str:
    L = ["# The fusion's fitting queries: statements or tactic-level steps (leandojo-real halves)", "",
         f"Fusion: logistic regression over {', '.join(res['members'])} (top {res['depth']} each, l2 {res['l2']}), "
         f"fitted on random/val: {res['fit_queries']['statement']} statement-level queries, "
         f"{res['fit_queries']['tactic']} tactic-level step queries. " + halves_text(res, "recipe")]
    return "\n".join(L + markdown_tail(res, "fitted on", "The shipped recipe stays")) + "\n"


if __name__ == "__main__":
    main()
