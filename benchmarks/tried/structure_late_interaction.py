"""The learned structure scorer (issue 50): node embeddings trained contrastively, late interaction
over the fusion's top 100, alone and as a fusion member, on real states.

    python benchmarks/tried/structure_late_interaction.py --split leandojo-real/select [--cpu-minutes 12]

Trains retriever/tried/structure_encoder.py's NodeEncoder on state–premise pairs of random/train
(statement level: a theorem's initial goal and a premise its proof uses; in-batch negatives,
InfoNCE) on the CPU until its CPU-time budget, then re-ranks the top 100 of the fusion without
CFR (the members structure_retrieval.py measured, fitted on random/val) by late interaction,
and fits the fusion again with that ranking as a member. Scored on `--split` with intervals
that resample theorems; on select, the rule for close calls decides. Reads the member rankings
structure_retrieval.py cached (run it first). Writes
benchmarks/results/structure-late-interaction-<dataset>-<split>.{json,md}, and the scorer to
<run_dir>/structure-li/ (retriever/tried/registry.py registers it as `structure-li`).
"""
from __future__ import annotations

import logging
import pickle
import sys
import time
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import (add_allow_dirty, choose_within_noise, command_line, git_commit,
                                         load_config, machine, mean_interval, paired_intervals, parser,
                                         require_clean_tree, to_plain, write_results)
from prover.data.errors import UserInputError
from prover.utils.logs import setup_logging
from retriever.settings import RetrieverTrainConfig

log = logging.getLogger("structure_late_interaction")
FIT = "random/val"
MEMBER = "structure-li"
HEAD = "fusion-head"


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/retriever/cpu.yaml")
    p.add_argument("--split", required=True)
    p.add_argument("--cpu-minutes", type=float, default=12.0)
    p.add_argument("--theorems", type=int, default=30000, help="random/train theorems the pairs come from")
    p.add_argument("overrides", nargs="*", help="config overrides, key=value")
    add_allow_dirty(p)
    args = p.parse_args(argv)
    setup_logging()
    require_clean_tree(args.allow_dirty)
    cfg = load_config(RetrieverTrainConfig, args.config, list(args.overrides))
    from prover.benchmarking.structure_members import cache_dir, fusion_rankings, per_query
    from prover.data.dataset import Dataset
    from retriever.registry import missing_training
    cache = cache_dir(cfg)
    paths = {s: cache / f"{s.replace('/', '-')}.pkl" for s in (FIT, args.split)}
    if not all(p.exists() for p in paths.values()):
        raise UserInputError(f"no cached member rankings under {cache}; run: python "
                             f"benchmarks/structure_retrieval.py --split {args.split}")
    data = {s: pickle.loads(p.read_bytes()) for s, p in paths.items()}
    base = [m for m in cfg.fusion.members if not missing_training(m, cfg)]
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    t0 = time.perf_counter()
    from retriever.tried.late_interaction import NAME, save, train
    scorer, trained = train(ds, args.theorems, args.cpu_minutes, int(cfg.seed))
    # Saved where the registered `structure-li` (retriever/tried/late_interaction.py) loads it.
    trained["saved_to"] = str(save(scorer, Path(cfg.run_dir) / NAME))
    from prover.data.pairs import premise_queries
    for split, d in data.items():
        queries = premise_queries(ds.theorems(split), ds.corpus(), ds.skips)[0]
        if [sorted(q.gold) for q in queries] != d["gold"]:
            raise ValueError(f"the cached rankings of {split} are of other queries: rerun structure_retrieval.py")
        heads = fusion_rankings(data[FIT], d, base, cfg)
        d["members"][MEMBER] = [scorer.rerank(q.state, h[:100]) for q, h in zip(queries, heads)]
        # the control: the same candidates in the fusion's own order, so that what a second
        # fusion gains from stacking on the first is not credited to the learned scorer
        d["members"][HEAD] = [h[:100] for h in heads]
        log.info("%s re-ranked %s", MEMBER, split)
    d = data[args.split]
    theorems = d["theorems"]
    ranked = {"fusion": fusion_rankings(data[FIT], d, base, cfg), MEMBER: d["members"][MEMBER],
              f"fusion+{MEMBER}": fusion_rankings(data[FIT], d, base + [MEMBER], cfg),
              f"fusion+{HEAD}": fusion_rankings(data[FIT], d, base + [HEAD], cfg)}
    metrics = {name: {m: np.array([per_query(r, g)[m] for r, g in zip(rs, d["gold"])])
                      for m in ("R@1", "R@10", "MRR")} for name, rs in ranked.items()}
    rows = []
    for name, ms in metrics.items():
        row = {"row": name}
        for m, v in ms.items():
            row[m] = round(float(v.mean()), 4)
            row[f"{m} 95% CI"] = [round(x, 4) for x in mean_interval(v, clusters=theorems)]
        rows.append(row)
    comparisons = []
    for b_row in ("fusion", f"fusion+{HEAD}"):
        for m in ("R@1", "R@10", "MRR"):
            a, b = metrics[f"fusion+{MEMBER}"][m], metrics[b_row][m]
            ci = paired_intervals(a, b, clusters=theorems).diff
            comparisons.append({"a": f"fusion+{MEMBER}", "b": b_row, "metric": m,
                                "diff": round(float(a.mean() - b.mean()), 4), "ci": [round(ci[0], 4), round(ci[1], 4)]})
    gain, over_control = comparisons[1], comparisons[4]
    best = f"fusion+{MEMBER}" if gain["diff"] > 0 else "fusion"
    kept, why = choose_within_noise("fusion", best, [100 * x for x in gain["ci"]])
    if kept != "fusion" and over_control["ci"][0] <= 0:
        kept = "fusion"
        why += (f"; but over the stacking control (fusion+{HEAD}) it is [{100 * over_control['ci'][0]:+.1f}, "
                f"{100 * over_control['ci'][1]:+.1f}]: the gain is the second fusion's, not the learned "
                f"scorer's, so fusion stays")
    result = {"benchmark": "structure-late-interaction", "command": command_line(), "config": to_plain(cfg),
              "git_commit": git_commit(), "machine": machine(), "seconds": round(time.perf_counter() - t0, 1),
              "split": args.split, "fitted_on": FIT, "n_queries": len(d["gold"]), "members": base,
              "trained": {MEMBER: trained}, "rows": rows, "comparisons": comparisons, "decision": why,
              "chosen_members": "+".join(base + ([MEMBER] if kept != "fusion" else []))}
    lines = [f"# Learned structure: late interaction over the fusion's top 100, {args.split} "
             f"({result['n_queries']} queries)", "",
             f"`{result['command']}` at commit {result['git_commit']}. NodeEncoder trained on {trained['pairs']} "
             f"random/train pairs for {trained['steps']} steps ({trained['cpu_seconds']} CPU-s, stopped by its "
             f"{args.cpu_minutes:g} CPU-minute budget; last loss {trained['final_loss']}). Fusions fitted on {FIT}; "
             f"members {', '.join(base)} (CFR untrained here, left out).", "",
             "| row | R@1 | R@10 | MRR |", "|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['row']} | " + " | ".join(
            f"{100 * row[m]:.1f} [{100 * row[m + ' 95% CI'][0]:.1f}, {100 * row[m + ' 95% CI'][1]:.1f}]"
            for m in ("R@1", "R@10", "MRR")) + " |")
    lines += ["", "| a − b | metric | difference, 95% interval (points) |", "|---|---|---|"]
    lines += [f"| {c['a']} − {c['b']} | {c['metric']} | {100 * c['diff']:+.1f} "
              f"[{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}] |" for c in comparisons]
    lines += ["", f"Decision (rule for close calls): {why}."]
    write_results(Path("benchmarks/results") / f"structure-late-interaction-{Path(cfg.data.root).name}-"
                  f"{args.split.replace('/', '-')}", result, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0

if __name__ == "__main__":
    sys.exit(main())
