"""Choose `neighbors`' k and the `fusion` members on the validation splits only.

    python benchmarks/fusion_selection.py [--config configs/retriever/cpu.yaml] [--run-dir DIR]

Every candidate is measured on random/val (statement level) and leandojo-real/select (real
states; the half of real val that choices are made on, prover/data/halves.py): `neighbors` at
several k alone, then the fusion over several member sets, each fitted on random/val (as
`prover retriever train-fusion` fits it) and scored on leandojo-real/select, whose queries it
never saw. No test split is read, nor leandojo-real/report (the half results are reported on).
The committed fusion-selection results predate the halves: they scored all of real val. Writes
benchmarks/results/fusion-selection-<dataset>.{json,md}; benchmarks/selection.py lists the
choice with the others. Member rankings are cached under <run_dir>/fusion-selection/, so a
rerun only fits.
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import numpy as np

from prover.benchmarking.fusion_members import examples, rankings, recall10
from prover.benchmarking.harness import (add_allow_dirty, command_line, git_commit, load_config, machine,
                                         paired_intervals, parser, require_clean_tree, to_plain,
                                         write_results)
from prover.utils.logs import setup_logging
from retriever.settings import RetrieverTrainConfig

log = logging.getLogger("fusion_selection")

NEIGHBOR_KS = (5, 20, 50)
MEMBER_SETS = [
    ["bm25", "usage", "locality"],
    ["bm25", "usage", "locality", "neighbors"],
    ["bm25", "usage", "locality", "cfr-conventional"],
    ["bm25", "usage", "neighbors", "cfr-conventional"],
    ["bm25", "usage", "locality", "neighbors", "cfr-conventional"],
    ["bm25", "usage", "locality", "neighbors", "neighbors-20", "neighbors-50", "cfr-conventional"],
    # Lever 1 inside the fusion: neighbors over tactic-level pseudo steps, instead of or beside
    # the statement-level neighbors.
    ["bm25", "usage", "locality", "neighbors-tactic", "cfr-conventional"],
    ["bm25", "usage", "locality", "neighbors", "neighbors-tactic"],
    ["bm25", "usage", "locality", "neighbors", "neighbors-tactic", "cfr-conventional"],
]
SCORED = "leandojo-real/select"
SPLITS = ("random/val", SCORED)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/retriever/cpu.yaml")
    p.add_argument("--run-dir", default=None, help="the trained run whose CFR is a member (default: the config's)")
    add_allow_dirty(p)
    args = p.parse_args(argv)
    setup_logging()
    require_clean_tree(args.allow_dirty)
    overrides = [f"run_dir={args.run_dir}"] if args.run_dir else []
    cfg = load_config(RetrieverTrainConfig, args.config, overrides)
    from retriever.models.learned_fusion import fit_fusion, order
    cache = Path(cfg.run_dir) / "fusion-selection"
    all_members = sorted({m for s in MEMBER_SETS for m in s} | {f"neighbors-{k}" for k in NEIGHBOR_KS[1:]})
    t0 = time.perf_counter()
    data = {split: rankings(cfg, split, all_members, cache) for split in SPLITS}
    rows_k = []
    for k in NEIGHBOR_KS:
        name = "neighbors" if k == 5 else f"neighbors-{k}"
        row = {"neighbors_k": k}
        for split in SPLITS:
            d = data[split]
            row[f"{split} R@10"] = round(float(np.mean([recall10(r, g) for r, g in
                                                       zip(d["members"][name], d["gold"])])), 4)
        rows_k.append(row)
    rows_f, per_query = [], {}
    depth = cfg.fusion.depth
    for members in MEMBER_SETS:
        train = examples(data["random/val"], members, depth)
        real = examples(data[SCORED], members, depth)
        model = fit_fusion([e[1:3] for e in train], members, depth, cfg.fusion.l2)
        r = np.array([recall10(order(c, model.score(f)), g) for c, f, _, g in real])
        name = "+".join(members)
        per_query[name] = r
        rows_f.append({"members": name, "random/val R@10 (fitted there)":
                       round(float(np.mean([recall10(order(c, model.score(f)), g) for c, f, _, g in train])), 4),
                       f"{SCORED} R@10": round(float(r.mean()), 4)})
    chosen = "+".join(cfg.fusion.members)
    for row in rows_f:
        if row["members"] != chosen and chosen in per_query:
            lo, hi = paired_intervals(per_query[row["members"]], per_query[chosen],
                                      clusters=data[SCORED].get("theorems")).diff
            row["real R@10 minus chosen, 95% CI"] = [round(lo, 4), round(hi, 4)]
    result = {"benchmark": "fusion-selection", "command": command_line(),
              "config": to_plain(cfg), "git_commit": git_commit(), "machine": machine(),
              "seconds": round(time.perf_counter() - t0, 1), "fitted_on": "random/val",
              "scored_on": SCORED, "n_queries": {s: len(data[s]["gold"]) for s in SPLITS},
              "neighbors_k": rows_k, "member_sets": rows_f, "chosen_members": chosen,
              "chosen_neighbors_k": 5}
    out = Path("benchmarks/results")
    lines = ["# Fusion selection (validation splits only)", "",
             f"`{result['command']}` at commit {result['git_commit']}. `neighbors` at each k alone; then "
             f"the fusion over each member set, fitted on random/val and scored on {SCORED} "
             "(real states it never saw). Intervals: paired bootstrap over the real theorems against the "
             f"chosen set.", "", f"| neighbors k | random/val R@10 | {SCORED} R@10 |", "|---|---|---|"]
    lines += [f"| {r['neighbors_k']} | {100 * r['random/val R@10']:.1f} | {100 * r[f'{SCORED} R@10']:.1f} |"
              for r in rows_k]
    lines += ["", f"| fusion members | random/val R@10 (fitted there) | {SCORED} R@10 | minus chosen |",
              "|---|---|---|---|"]
    for r in rows_f:
        ci = r.get("real R@10 minus chosen, 95% CI")
        lines.append(f"| {r['members']}{' (chosen)' if r['members'] == chosen else ''} | "
                     f"{100 * r['random/val R@10 (fitted there)']:.1f} | {100 * r[f'{SCORED} R@10']:.1f} | "
                     f"{'' if ci is None else f'[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]'} |")
    write_results(out / "fusion-selection-mathlib-src", result, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
