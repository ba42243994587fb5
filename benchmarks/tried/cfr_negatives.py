"""Does CFR earn its place inside the fusion when trained on hard negatives? (issue 28)

The shipped fusion is a logistic regression over the ranks of five no-learning members (bm25,
usage, locality, neighbors, neighbors-tactic) and conventional CFR, fitted on random/val. Its CFR
was trained with uniform negatives; inside the fusion it adds [−0.5, +3.8] R@10 points on
leandojo-real/report (ltr-fusion-mathlib-src.md), an interval that holds zero.

Here each CFR given by `--cfr NAME=RUN_DIR` (a run of `prover retriever train-cfr`, e.g. with
`cfr.hard_negatives=bm25`, and one with uniform negatives trained beside it from the same
encoder: the shipped CFR was trained elsewhere, on a GPU) replaces the shipped one: the same
fusion recipe is fitted on random/val with it as sixth member and scored on real LeanDojo states. Rows on
`leandojo-real/select` choose; `leandojo-real/report` is scored once. Intervals resample
theorems. The shipped rows (fusion, CFR alone) are read from their committed rankings.

    python benchmarks/tried/cfr_negatives.py --cfr uniform=runs/retriever-cpu-uni --cfr hard-bm25=runs/retriever-cpu-hn
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from prover.benchmarking.tried.fusion_halves import (DEPTH, MEMBERS, arguments, examples, fusion_config, half_rows,
                                               rankings, recall10, split_fields)
from prover.benchmarking.harness import (choose_within_noise, command_line, corrections_markdown, git_commit, machine,
                                         paired_intervals, parser,
                                         peak_rss_gib, write_and_print)
from prover.data.halves import half_keys
from retriever.evaluation.evaluate import per_query_from_rankings
from retriever.models.learned_fusion import fit_fusion, order

COMMITTED = Path("benchmarks/results/rankings/retrieval-mathlib-src-leandojo-real-val-cpu")


def cfr_rankings(cfg, run_dir: str, split: str) -> list[list[int]]:
    """The CFR of `run_dir`'s top DEPTH for each query of `split` (the order `rankings` uses)."""
    from omegaconf import OmegaConf

    from retriever.training.train_fusion import member_rankings
    c = cfg.copy()
    OmegaConf.update(c, "run_dir", run_dir)
    OmegaConf.update(c, "fusion.members", ["cfr-conventional"])
    ranks, _ = member_rankings(c, split)
    return [r[0] for r in ranks]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--cfr", action="append", required=True, help="NAME=RUN_DIR of a trained conventional CFR")
    args = arguments(ap)
    t0 = time.perf_counter()
    cfg = fusion_config(args)
    cache = Path("runs/ltr-fusion")
    fit = rankings(cfg, "random/val", cache)
    real = rankings(cfg, "leandojo-real/val", cache)
    halves = {h: np.array([t in half_keys(f"leandojo-real/{h}") for t in real[2]]) for h in ("select", "report")}
    keys = [(q.theorem, q.tactic_index) for q in real[1]]

    per: dict[str, np.ndarray] = {}
    fit_ex = examples(*fit[:2], None, None, False)
    real_ex = examples(*real[:2], None, None, False)
    model = fit_fusion([e[1:3] for e in fit_ex], MEMBERS, DEPTH, cfg.fusion.l2)
    per["fusion without CFR"] = np.array([recall10(order(c, model.score(f)), g) for c, f, _, g in real_ex])
    for row, name in (("fusion", "shipped fusion (uniform-negative CFR)"), ("cfr-conventional", "CFR, uniform negatives (shipped)"),
                      ("bm25", "bm25")):
        k, values = per_query_from_rankings(Path(f"{COMMITTED}-{row}.jsonl.gz"))
        assert k == keys, f"committed {row} rankings are of other queries"
        per[name] = values["R@10"]
    trained = {}
    for spec in args.cfr:
        name, run_dir = spec.split("=", 1)
        summary = json.loads((Path(run_dir) / "cfr-conventional" / "summary.json").read_text())
        trained[name] = {"run_dir": run_dir, "steps": summary["steps"], "cpu_seconds": summary.get("cpu_seconds"),
                         "best_val_R@10": summary["best_val_R@10"], "done": summary["done"]}
        fit_c = cfr_rankings(cfg, run_dir, "random/val")
        real_c = cfr_rankings(cfg, run_dir, "leandojo-real/val")
        members = MEMBERS + ["cfr-conventional"]
        fit6 = examples([r + [c] for r, c in zip(fit[0], fit_c)], fit[1], None, None, False)
        real6 = examples([r + [c] for r, c in zip(real[0], real_c)], real[1], None, None, False)
        m6 = fit_fusion([e[1:3] for e in fit6], members, DEPTH, cfg.fusion.l2)
        per[f"fusion with CFR {name}"] = np.array([recall10(order(c, m6.score(f)), g) for c, f, _, g in real6])
        per[f"CFR {name}"] = np.array([recall10(np.asarray(c), set(q.gold)) for c, q in zip(real_c, real[1])])

    rows = half_rows(per, halves, real[2])
    # The one choice: which CFR the fusion keeps, among the shipped and the new ones, by the
    # project's rule for close calls (a select gain inside its noise keeps the shipped one).
    candidates = ["shipped fusion (uniform-negative CFR)"] + [f"fusion with CFR {n}" for n in trained]
    best = max(candidates, key=lambda n: rows[n]["select"]["R@10"])
    sel = halves["select"]
    d = paired_intervals(per[best][sel], per[candidates[0]][sel],
                         clusters=[t for t, k in zip(real[2], sel) if k]).diff
    chosen, why = choose_within_noise(candidates[0], best, (round(100 * d[0], 1), round(100 * d[1], 1)))
    mask = halves["report"]
    clusters = [t for t, k in zip(real[2], mask) if k]
    comps = []
    pairs = [(chosen, "fusion without CFR"), (chosen, "shipped fusion (uniform-negative CFR)")]
    pairs += [(f"fusion with CFR {n}", "fusion without CFR") for n in trained]
    names = list(trained)
    pairs += [(f"fusion with CFR {a}", f"fusion with CFR {b}") for i, a in enumerate(names) for b in names[i + 1:]]
    pairs += [(f"CFR {a}", f"CFR {b}") for i, a in enumerate(names) for b in names[i + 1:]]
    pairs += [(f"CFR {n}", "bm25") for n in trained]
    pairs = list(dict.fromkeys(pairs))
    for a, b in pairs:
        if a == b:
            continue
        d = paired_intervals(per[a][mask], per[b][mask], clusters=clusters).diff
        comps.append({"a": a, "b": b, "ci": [round(100 * d[0], 1), round(100 * d[1], 1)]})
    res = {"benchmark": "cfr-negatives", "command": command_line(), "git_commit": git_commit(),
           "machine": machine(), **split_fields(halves, real[2]), "trained": trained, "chosen_on_select": chosen, "chosen_why": why,
           "rows": rows, "report_comparisons": comps,
           "budget": f"no network; CPU seconds {round(time.perf_counter() - t0)} here, beyond each CFR's training",
           "peak_rss_gib": round(peak_rss_gib(), 2)}
    stem = Path("benchmarks/results") / "cfr-negatives-mathlib-src"
    write_and_print(stem, res, markdown)


def markdown(res: dict) -> str:
    L = ["# CFR's negatives and its place in the fusion (leandojo-real halves)", "",
         f"`{res['command']}` at commit {res['git_commit']}; {res['budget']}. Fusion: logistic regression over "
         f"{', '.join(res['members'])} (top {res['depth']} each) and one conventional CFR, fitted on random/val. "
         f"Select: {res['n_queries']['select']} queries of {res['n_theorems']['select']} theorems (the choice); "
         f"report: {res['n_queries']['report']} of {res['n_theorems']['report']}, scored once. Brackets: 95% "
         "bootstrap intervals resampling theorems.", "",
         "| CFR run | steps | CPU s | best val R@10 (random/val) | done |", "|---|---|---|---|---|"]
    L += [f"| {n} (`{t['run_dir']}`) | {t['steps']} | {t['cpu_seconds']} | {t['best_val_R@10']} | {t['done']} |"
          for n, t in res["trained"].items()]
    L += ["", "| row | select R@10 | report R@10 |", "|---|---|---|"]
    L += [f"| {n} | {v['select']['R@10']} {v['select']['ci']} | {v['report']['R@10']} {v['report']['ci']} |"
          for n, v in res["rows"].items()]
    why = f" ({res['chosen_why']})" if res.get("chosen_why") else ""
    L += ["", f"Chosen on select: **{res['chosen_on_select']}**{why}. Paired on report (points):", "",
          "| a | b | a − b |", "|---|---|---|"]
    L += [f"| {c['a']} | {c['b']} | {c['ci']} |" for c in res["report_comparisons"]]
    L += corrections_markdown(res)
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
