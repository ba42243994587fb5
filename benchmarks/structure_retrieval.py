"""Structure retrieval (issue 50): the `structure` retriever alone, BM25, and the fusion with and
without it as a member, on real states.

    python benchmarks/structure_retrieval.py --split leandojo-real/select   # choose
    python benchmarks/structure_retrieval.py --split leandojo-real/report   # report (its look counted)
    python benchmarks/structure_retrieval.py --split leandojo-real/select --run-dir runs/retriever-cpu
        # with the trained run's cfr-conventional in both fusions: the decision with CFR

Each fusion is fitted on random/val, as `prover retriever train-fusion` fits the shipped one,
and scored on `--split`: R@1, R@10 and MRR with 95% bootstrap intervals that resample
theorems, and the paired difference of the fusion with `structure` to the one without. On
select the rule for close calls (`choose_within_noise`) says whether `structure` joins the
members; report only scores, and its look (how many times this benchmark had scored the split)
is counted in benchmarks/results/looks.jsonl (prover/benchmarking/looks.py). Each query's
top 10 and R@1, R@10 and MRR per row are written to per_query/<stem>.jsonl.gz. The fusion's members are the config's `fusion.members`; a member
whose model is not trained in the run (`cfr-conventional` without `prover retriever train-cfr`)
is left out of both fusions, and the results file says so. Also measured: the parser's
fallback share over the split's states and the corpus's premises, and the p50 latency at batch
1 of `structure` and of `bm25` (fusion members run one after another, so a member adds its
own). Member rankings are cached under <run_dir>/structure-retrieval/. Writes
benchmarks/results/structure-retrieval-<dataset>-<split>.{json,md}.
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import (add_allow_dirty, choose_within_noise, command_line, git_commit,
                                         load_config, machine, mean_interval, paired_intervals, parser,
                                         require_clean_tree, to_plain, write_results)
from prover.benchmarking.structure_members import (FIT, cache_dir, ci, fusion_rankings, pct, per_query, per_query_records, provenance_line,
                                                  rankings, results_stem, signed_ci, split_queries)
from prover.benchmarking.looks import REGISTRY as LOOKS, take_look
from prover.benchmarking.per_query import write_per_query
from prover.utils.logs import setup_logging
from retriever.evaluation.benchmark import members_trained_by, training_summaries
from retriever.settings import RetrieverTrainConfig

log = logging.getLogger("structure_retrieval")
STRUCTURE = "structure"


def fallback_share(states: list[str]) -> dict:
    from retriever.structure.optree import state_trees
    trees = fallbacks = 0
    for s in states:
        st = state_trees(s)
        trees += len(st.trees)
        fallbacks += sum(t.fallbacks > 0 for t in st.trees)
    return {"trees": trees, "with_fallback": fallbacks, "share": round(fallbacks / max(trees, 1), 4)}


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/retriever/cpu.yaml")
    p.add_argument("--split", required=True, help="leandojo-real/select (choose) or leandojo-real/report")
    p.add_argument("--run-dir", default=None, help="the trained run whose models are members (default: the config's)")
    p.add_argument("--latency-queries", type=int, default=50)
    p.add_argument("--choose", action="store_true",
                   help="apply the rule for close calls on this split (always on leandojo-real/select; "
                        "for a rehearsal on another split)")
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
    from prover.data.dataset import Dataset
    from retriever.evaluation.evaluate import latency
    from retriever.registry import build_members, missing_training
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()
    untrained = {m: why for m in cfg.fusion.members if (why := missing_training(m, cfg))}
    base = [m for m in cfg.fusion.members if m not in untrained and m != STRUCTURE]  # with and without it
    with_structure = base + [STRUCTURE]
    cache = cache_dir(cfg)
    t0 = time.perf_counter()
    built: dict = {STRUCTURE: build_members([STRUCTURE], corpus, cfg)[0]}
    structure_build_s = round(time.perf_counter() - t0, 1)
    data = {s: rankings(cfg, ds, corpus, s, with_structure, built, cache) for s in (FIT, args.split)}
    d = data[args.split]
    theorems = d["theorems"]
    ranked = {STRUCTURE: d["members"][STRUCTURE], "bm25": d["members"]["bm25"],
              "fusion": fusion_rankings(data[FIT], d, base, cfg),
              "fusion+structure": fusion_rankings(data[FIT], d, with_structure, cfg)}
    metrics = {name: {m: np.array([per_query(r, g)[m] for r, g in zip(rs, d["gold"])])
                      for m in ("R@1", "R@10", "MRR")} for name, rs in ranked.items()}
    records = per_query_records(d, ranked, metrics)
    rows = []
    for name, ms in metrics.items():
        row = {"row": name, "members": "+".join(with_structure if name == "fusion+structure" else base)
               if name.startswith("fusion") else name}
        for m, v in ms.items():
            row[m] = round(float(v.mean()), 4)
            row[f"{m} 95% CI"] = [round(x, 4) for x in mean_interval(v, clusters=theorems)]
        rows.append(row)
    comparisons = []
    for a, b in (("fusion+structure", "fusion"), (STRUCTURE, "bm25")):
        for m in ("R@1", "R@10", "MRR"):
            ci = paired_intervals(metrics[a][m], metrics[b][m], clusters=theorems).diff
            comparisons.append({"a": a, "b": b, "metric": m, "diff": round(float(metrics[a][m].mean()
                                                                                - metrics[b][m].mean()), 4),
                                "ci": [round(ci[0], 4), round(ci[1], 4)]})
    gain = next(c for c in comparisons if c["a"] == "fusion+structure" and c["metric"] == "R@10")
    select = args.split.endswith("/select") or args.choose
    lat_q = split_queries(ds, args.split, corpus)
    lat = {name: latency(built.get(name) or build_members([name], corpus, cfg)[0], lat_q,
                         args.latency_queries) for name in (STRUCTURE, "bm25")}
    result = {"benchmark": "structure-retrieval", "trained": training_summaries(cfg, members_trained_by(with_structure)),
              "command": command_line(), "config": to_plain(cfg),
              "git_commit": git_commit(), "machine": machine(), "seconds": round(time.perf_counter() - t0, 1),
              "split": args.split, "fitted_on": FIT, "n_queries": len(d["gold"]),
              "n_theorems": len(set(theorems)), "members": base,
              "left_out_untrained": untrained, "rows": rows, "comparisons": comparisons,
              "parser_fallbacks": {"states": fallback_share([q.state for q in lat_q]),
                                   "premises": {"share": round(built[STRUCTURE].fallback_share, 4),
                                                "trees": built[STRUCTURE].trees}},
              "latency_batch1": lat, "structure_index_seconds": structure_build_s}
    if select:
        best = "fusion+structure" if gain["diff"] > 0 else "fusion"
        kept, why = choose_within_noise("fusion", best, [100 * x for x in gain["ci"]])
        result["chosen_members"] = "+".join(with_structure if kept == "fusion+structure" else base)
        result["decision"] = why
    else:
        result["chosen_on_select"] = True
    stem = results_stem(args.out, "structure-retrieval", cfg, args.split, args.tag)
    # The look is counted from the registry of scorings, never asserted (issue 62).
    result.update(take_look(stem.name, result["benchmark"], args.split, result["git_commit"],
                            args.tag or "default", Path(args.out) / LOOKS.name))
    result["per_query"] = write_per_query(stem, records)
    write_results(stem, result, markdown(result))
    print(markdown(result))
    return 0


def markdown(r: dict) -> str:
    sci = signed_ci
    lines = [f"# Structure retrieval: {r['split']} ({r['n_queries']} queries, {r['n_theorems']} theorems)", "",
             provenance_line(r, "decision" in r), "",
             f"Fusion members: {', '.join(r['members'])}. Premise texts: to_additive twins "
             + ("rendered as their own statements (data.render_to_additive)."
                if r["config"]["data"].get("render_to_additive", False) else "as their multiplicative source's text.")]
    if r["left_out_untrained"]:
        lines.append("Left out of both fusions, untrained in this run: "
                     + "; ".join(f"`{m}` ({why.split(':')[0]})" for m, why in r["left_out_untrained"].items())
                     + ". The shipped fusion has them: these fusions are not the shipped one.")
    lines += ["", "| row | R@1 | R@10 | MRR |", "|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['row']} | " + " | ".join(
            f"{pct(row[m])} {ci(row[f'{m} 95% CI'])}" if m != "MRR" else
            f"{row[m]:.3f} [{row[f'{m} 95% CI'][0]:.3f}, {row[f'{m} 95% CI'][1]:.3f}]"
            for m in ("R@1", "R@10", "MRR")) + " |")
    lines += ["", "Paired differences (95% intervals resampling theorems; points, MRR ×100):", "",
              "| a − b | R@1 | R@10 | MRR |", "|---|---|---|---|"]
    for a, b in dict.fromkeys((c["a"], c["b"]) for c in r["comparisons"]):
        cells = {c["metric"]: c for c in r["comparisons"] if (c["a"], c["b"]) == (a, b)}
        lines.append(f"| {a} − {b} | " + " | ".join(f"{100 * cells[m]['diff']:+.1f} {sci(cells[m]['ci'])}"
                                                    for m in ("R@1", "R@10", "MRR")) + " |")
    if "decision" in r:
        lines += ["", f"Decision (rule for close calls): {r['decision']}. Members kept: {r['chosen_members']}."]
    fb = r["parser_fallbacks"]
    lat = r["latency_batch1"]
    lines += ["", f"Parser fallbacks: {fb['states']['with_fallback']} of {fb['states']['trees']} state trees "
              f"({100 * fb['states']['share']:.1f}%), {100 * fb['premises']['share']:.1f}% of "
              f"{fb['premises']['trees']} premise trees. Latency p50 at batch 1: structure "
              f"{lat['structure'].get('latency_ms_p50')} ms, bm25 {lat['bm25'].get('latency_ms_p50')} ms "
              f"({lat['structure'].get('latency_queries')} queries; indexing the corpus took "
              f"{r['structure_index_seconds']} s)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
