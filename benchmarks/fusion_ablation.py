"""What each member of the shipped `fusion` adds, on an evaluation split: an ablation table.

    python benchmarks/fusion_ablation.py --split random/test
    python benchmarks/fusion_ablation.py --split novel_premises/test --run-dir runs/retriever-cpu-novel_premises
    python benchmarks/fusion_ablation.py --split leandojo-real/val

For the shipped member set (configs/retriever/cpu.yaml `fusion.members`), the set without
each member in turn, and the priors alone (bm25, usage, locality), a fusion is fitted on the
strategy's validation split (random/val, or novel_premises/val for novel_premises/test), as
`prover retriever train-fusion` fits it, and scored once on `--split`: R@10 with its 95%
interval, and its paired difference to the shipped set. The choice of members was made on
validation splits (benchmarks/fusion_selection.py); this table only reports it. Member
rankings are cached under <run_dir>/fusion-selection/ (the selection's cache), so a rerun
only fits. Writes benchmarks/results/fusion-ablation-<dataset>-<split>.{json,md}.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from prover.benchmarking.fusion_members import examples, rankings, recall10
from prover.benchmarking.harness import (add_allow_dirty, command_line, git_commit, load_config, machine,
                                         mean_interval, paired_intervals, parser, require_clean_tree,
                                         to_plain, write_results)
from prover.utils.logs import setup_logging
from retriever.settings import RetrieverTrainConfig

PRIORS = ["bm25", "usage", "locality"]


def fit_split(split: str) -> str:
    """The validation split a fusion evaluated on `split` is fitted on."""
    strategy = split.split("/")[0]
    return "novel_premises/val" if strategy == "novel_premises" else "random/val"


def member_sets(chosen: list[str]) -> list[list[str]]:
    sets = [chosen] + [[m for m in chosen if m != drop] for drop in chosen]
    if PRIORS not in sets:
        sets.append(PRIORS)
    return sets


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/retriever/cpu.yaml")
    p.add_argument("--split", required=True, help="the split scored (a test split, or leandojo-real/val)")
    p.add_argument("--run-dir", default=None, help="the trained run whose CFR is a member (default: the config's)")
    add_allow_dirty(p)
    args = p.parse_args(argv)
    setup_logging()
    require_clean_tree(args.allow_dirty)
    overrides = [f"run_dir={args.run_dir}"] if args.run_dir else []
    cfg = load_config(RetrieverTrainConfig, args.config, overrides)
    from retriever.models.learned_fusion import fit_fusion, order
    fit_on = fit_split(args.split)
    chosen = list(cfg.fusion.members)
    sets = member_sets(chosen)
    cache = Path(cfg.run_dir) / "fusion-selection"
    t0 = time.perf_counter()
    data = {s: rankings(cfg, s, chosen, cache) for s in (fit_on, args.split)}
    depth = cfg.fusion.depth

    per_query = {}
    for members in sets:
        model = fit_fusion([e[1:3] for e in examples(data[fit_on], members, depth)], members, depth, cfg.fusion.l2)
        per_query["+".join(members)] = np.array([recall10(order(c, model.score(f)), g)
                                                 for c, f, _, g in examples(data[args.split], members, depth)])
    for m in chosen:  # each member alone, for scale
        per_query[m] = np.array([recall10(r, g) for r, g in zip(data[args.split]["members"][m],
                                                                data[args.split]["gold"])])
    shipped = per_query["+".join(chosen)]
    rows = []
    for name, r in per_query.items():
        lo, hi = mean_interval(r)
        row = {"row": name, "fusion": "+" in name, "R@10": round(float(r.mean()), 4),
               "R@10 95% CI": [round(lo, 4), round(hi, 4)]}
        if name != "+".join(chosen):
            d = paired_intervals(r, shipped).diff
            row["minus shipped, 95% CI"] = [round(d[0], 4), round(d[1], 4)]
        rows.append(row)
    result = {"benchmark": "fusion-ablation", "command": command_line(),
              "config": to_plain(cfg), "git_commit": git_commit(), "machine": machine(),
              "seconds": round(time.perf_counter() - t0, 1), "fitted_on": fit_on, "scored_on": args.split,
              "n_queries": len(data[args.split]["gold"]), "shipped": "+".join(chosen), "rows": rows}
    out = Path("benchmarks/results")
    stem = f"fusion-ablation-{Path(cfg.data.root).name}-{args.split.replace('/', '-')}"
    lines = [f"# Fusion ablation: {args.split} ({result['n_queries']} queries)", "",
             f"`{result['command']}` at commit {result['git_commit']}, run `{cfg.run_dir}`. Each fusion is "
             f"fitted on {fit_on} and scored once here; the members alone follow for scale. Brackets: "
             "95% bootstrap intervals over the queries; the last column is the paired difference to "
             "the shipped set (percentage points).", "",
             "| row | R@10 | minus shipped |", "|---|---|---|"]
    for r in rows:
        ci, d = r["R@10 95% CI"], r.get("minus shipped, 95% CI")
        name = r["row"] + (" (shipped)" if r["row"] == result["shipped"] else "")
        lines.append(f"| {name} | {100 * r['R@10']:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}] | "
                     f"{'' if d is None else f'[{100 * d[0]:+.1f}, {100 * d[1]:+.1f}]'} |")
    write_results(out / stem, result, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
