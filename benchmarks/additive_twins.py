"""What rendering `@[to_additive]` twins as their own statements changes (issue 50):
`data.render_to_additive` on against off, for BM25, `structure`, and the fusion with and without
`structure`, on real states.

    python benchmarks/additive_twins.py --split leandojo-real/select   # choose
    python benchmarks/additive_twins.py --split leandojo-real/report   # report, once
    python benchmarks/additive_twins.py --split leandojo-real/select --run-dir /work/train/runs/retriever-cpu

In the corpus a twin's code and goal are its multiplicative source's (`add_comm` reads
`a * b = b * a`); rendered, they read `a + b = b + a` (prover/data/additive_twins.py). Each row
is measured with both texts: R@1, R@10 and MRR with 95% bootstrap intervals that resample
theorems, and the paired difference rendered − source text. The fusions are the config's
`fusion.members` that the run has trained (a `cfr-conventional` of `--run-dir` included, its
saved twin vectors re-encoded from each text), fitted on random/val as train-fusion fits them.
Members that never read a premise's text (usage, locality, neighbours) rank the same either
way and are ranked once. On select the rule for close calls decides, the fusion of the config's
members deciding: the source text (what shipped before) stays unless rendering's interval lies
above zero. Member rankings are cached under <run_dir>/structure-retrieval[-source-text]/.
Writes benchmarks/results/additive-twins-<dataset>-<split>.{json,md}.
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from prover.benchmarking.harness import (add_allow_dirty, choose_within_noise, command_line, git_commit,
                                         load_config, machine, mean_interval, paired_intervals, parser,
                                         require_clean_tree, to_plain, write_results)
from prover.benchmarking.structure_members import (FIT, cache_dir, ci, fusion_rankings, pct, per_query, per_query_records, provenance_line,
                                                  rankings, results_stem, signed_ci)
from prover.benchmarking.looks import REGISTRY as LOOKS, take_look
from prover.benchmarking.per_query import write_per_query
from prover.utils.logs import setup_logging
from retriever.evaluation.benchmark import members_trained_by, training_summaries
from retriever.settings import RetrieverTrainConfig

log = logging.getLogger("additive_twins")
STRUCTURE = "structure"
METRICS = ("R@1", "R@10", "MRR")
SETTINGS = {"rendered": True, "source text": False}


def _measure(cfg, split: str, members: list[str], reuse: dict | None) -> tuple[dict, dict, dict, dict]:
    """(per row, per metric, the per-query values), the split's cached rankings, the corpus's
    twin count, and each row's rankings, with `data.render_to_additive` as `cfg` has it."""
    from prover.data.additive_twins import is_twin
    from prover.data.dataset import Dataset
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()
    built: dict = {}
    data = {s: rankings(cfg, ds, corpus, s, members, built, cache_dir(cfg), (reuse or {}).get(s))
            for s in (FIT, split)}
    d = data[split]
    base = [m for m in members if m != STRUCTURE]
    ranked = {"bm25": d["members"]["bm25"], STRUCTURE: d["members"][STRUCTURE],
              "fusion": fusion_rankings(data[FIT], d, base, cfg),
              "fusion+structure": fusion_rankings(data[FIT], d, members, cfg)}
    values = {row: {m: np.array([per_query(r, g)[m] for r, g in zip(rs, d["gold"])]) for m in METRICS}
              for row, rs in ranked.items()}
    return values, data, {"twins": sum(is_twin(p) for p in corpus.premises), "premises": len(corpus)}, ranked


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/retriever/cpu.yaml")
    p.add_argument("--split", required=True, help="leandojo-real/select (choose) or leandojo-real/report")
    p.add_argument("--run-dir", default=None, help="the trained run whose models are members (default: the config's)")
    p.add_argument("--out", default="benchmarks/results", help="where the results files go")
    p.add_argument("--tag", default="", help="a suffix for the results files' names (e.g. cfr: the fusion with "
                                            "a trained CFR member, beside the committed files without one)")
    p.add_argument("overrides", nargs="*", help="config overrides, key=value")
    add_allow_dirty(p)
    args = p.parse_args(argv)
    setup_logging()
    require_clean_tree(args.allow_dirty)
    cfg = load_config(RetrieverTrainConfig, args.config,
                      ([f"run_dir={args.run_dir}"] if args.run_dir else []) + list(args.overrides))
    from retriever.registry import missing_training
    untrained = {m: why for m in cfg.fusion.members if (why := missing_training(m, cfg))}
    members = [m for m in cfg.fusion.members if m not in untrained and m != STRUCTURE] + [STRUCTURE]
    t0 = time.perf_counter()
    values, data, twins, ranked = {}, None, {}, {}
    for name, on in SETTINGS.items():
        c = cfg.copy()
        OmegaConf.update(c, "data.render_to_additive", on)
        values[name], data, twins[name], ranked[name] = _measure(c, args.split, members, data)
    theorems = data[args.split]["theorems"]
    records = per_query_records(data[args.split], {f"{row} ({name})": rs for name in ranked for row, rs in ranked[name].items()},
                                {f"{row} ({name})": v for name in values for row, v in values[name].items()})
    rows = []
    for name, per_row in values.items():
        for row, ms in per_row.items():
            r = {"text": name, "row": f"{row} ({name})"}
            for m, v in ms.items():
                r[m] = round(float(v.mean()), 4)
                r[f"{m} 95% CI"] = [round(x, 4) for x in mean_interval(v, clusters=theorems)]
            rows.append(r)
    comparisons = []
    for row in values["rendered"]:
        for m in METRICS:
            a, b = values["rendered"][row][m], values["source text"][row][m]
            ci = paired_intervals(a, b, clusters=theorems).diff
            comparisons.append({"row": row, "metric": m, "diff": round(float(a.mean() - b.mean()), 4),
                                "ci": [round(ci[0], 4), round(ci[1], 4)]})
    result = {"benchmark": "additive-twins", "trained": training_summaries(cfg, members_trained_by(members)),
              "command": command_line(), "config": to_plain(cfg),
              "git_commit": git_commit(), "machine": machine(), "seconds": round(time.perf_counter() - t0, 1),
              "split": args.split, "fitted_on": FIT, "n_queries": len(theorems),
              "n_theorems": len(set(theorems)), "members": members[:-1],
              "left_out_untrained": untrained, "twins": twins["source text"], "rows": rows,
              "comparisons": comparisons}
    if args.split.endswith("/select"):
        gain = next(c for c in comparisons if c["row"] == "fusion" and c["metric"] == "R@10")
        best = "rendered" if gain["diff"] > 0 else "source text"
        kept, why = choose_within_noise("source text", best, [100 * x for x in gain["ci"]])
        result["chosen"] = {"render_to_additive": kept == "rendered", "decision": why}
    else:
        result["chosen_on_select"] = True
    stem = results_stem(args.out, "additive-twins", cfg, args.split, args.tag)
    # The look is counted from the registry of scorings, never asserted (issue 62).
    result.update(take_look(stem.name, result["benchmark"], args.split, result["git_commit"],
                            args.tag or "default", Path(args.out) / LOOKS.name))
    result["per_query"] = write_per_query(stem, records)
    write_results(stem, result, markdown(result))
    print(markdown(result))
    return 0


def markdown(r: dict) -> str:
    sci = signed_ci
    lines = [f"# to_additive twins rendered: {r['split']} ({r['n_queries']} queries, {r['n_theorems']} theorems)", "",
             provenance_line(r, "chosen" in r), "",
             f"{r['twins']['twins']} of the corpus's {r['twins']['premises']} premises are to_additive twins; "
             "\"rendered\" reads each as its own statement (data.render_to_additive=true), \"source text\" as "
             "its multiplicative source's.", "",
             f"Fusion members: {', '.join(r['members'])} (fusion+structure adds structure)."]
    if r["left_out_untrained"]:
        lines.append("Left out, untrained in this run: "
                     + "; ".join(f"`{m}` ({why.split(':')[0]})" for m, why in r["left_out_untrained"].items())
                     + ". The shipped fusion has them: these fusions are not the shipped one.")
    lines += ["", "| row (premise text) | R@1 | R@10 | MRR |", "|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['row']} | " + " | ".join(
            f"{pct(row[m])} {ci(row[f'{m} 95% CI'])}" if m != "MRR" else
            f"{row[m]:.3f} [{row[f'{m} 95% CI'][0]:.3f}, {row[f'{m} 95% CI'][1]:.3f}]" for m in METRICS) + " |")
    lines += ["", "Rendered − source text, paired (95% intervals resampling theorems; points, MRR ×100):", "",
              "| row | R@1 | R@10 | MRR |", "|---|---|---|---|"]
    for row in dict.fromkeys(c["row"] for c in r["comparisons"]):
        cells = {c["metric"]: c for c in r["comparisons"] if c["row"] == row}
        lines.append(f"| {row} | " + " | ".join(f"{100 * cells[m]['diff']:+.1f} {sci(cells[m]['ci'])}"
                                              for m in METRICS) + " |")
    if "chosen" in r:
        lines += ["", f"Decision (rule for close calls, on the fusion's R@10): {r['chosen']['decision']}. "
                  f"data.render_to_additive: {str(r['chosen']['render_to_additive']).lower()}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
