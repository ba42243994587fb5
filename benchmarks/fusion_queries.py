"""Which queries should the fusion be fitted on: statements, or tactic-level steps? (issue 28)

The shipped fusion (configs/retriever/cpu.yaml: a logistic regression over the ranks of bm25,
usage, locality, neighbors, neighbors-tactic and conventional CFR) is fitted on random/val's
statement-level queries: one per theorem, its initial goal. Proof search asks about mid-proof
states. `fusion.granularity=tactic` fits it on the same theorems split into tactic-level steps
(prover/data/tactic_steps.py: each step's state with the premises its own tactic uses), which
look more like them. Rows: fitted on statements (the shipped recipe), on steps, on both. The
recipe is chosen on leandojo-real/select; report is scored once, for the chosen one against the
shipped one. Intervals resample theorems.

    python benchmarks/fusion_queries.py
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.ltr_fusion import arguments, cached_rankings, half_rows, recall10  # noqa: E402
from prover.data.dataset import Dataset  # noqa: E402
from prover.data.halves import half_keys  # noqa: E402
from prover.data.jsonio import write_json  # noqa: E402
from prover.data.pairs import premise_queries  # noqa: E402
from prover.data.tactic_steps import tactic_level  # noqa: E402
from prover.utils.runinfo import machine, peak_rss_gib, require_clean_tree  # noqa: E402
from retriever.evaluation.bootstrap import N_RESAMPLES, SEED, paired_intervals  # noqa: E402
from retriever.models.learned_fusion import fit_fusion, order, rank_features  # noqa: E402

RECIPES = {"statements (shipped)": ("statement",), "steps": ("tactic",), "statements + steps": ("statement", "tactic")}
SHIPPED = "statements (shipped)"


def rankings(cfg, split: str, granularity: str, cache: Path) -> tuple[list, list]:
    """Every member's top `depth` per query of `split` at this granularity, and the queries
    (cached under `cache`: ranking takes minutes)."""
    from omegaconf import OmegaConf
    c = cfg.copy()
    OmegaConf.update(c, "fusion.granularity", granularity)
    OmegaConf.update(c, "fusion.max_queries", None)
    path = cache / f"{split.replace('/', '-')}-{granularity}.pkl"
    ranks = cached_rankings(c, split, path)
    ds = Dataset(cfg.data.root)
    theorems = ds.theorems(split)
    if granularity == "tactic":
        theorems, _ = tactic_level(theorems, max_target_bytes=0)
    queries, _ = premise_queries(theorems, ds.corpus(), ds.skips)
    if len(queries) != len(ranks):
        raise SystemExit(f"{path}: rankings of {len(ranks)} queries, the split has {len(queries)}: delete it")
    return ranks, queries


def examples(ranks, queries, depth: int) -> list[tuple]:
    out = []
    for r, q in zip(ranks, queries):
        cand, feats = rank_features(r, depth)
        out.append((cand, feats, np.fromiter((c in set(q.gold) for c in cand.tolist()), bool, len(cand)), set(q.gold)))
    return out


def halves_of(theorems: list[str]) -> dict[str, np.ndarray]:
    return {h: np.array([t in half_keys(f"leandojo-real/{h}") for t in theorems]) for h in ("select", "report")}


def paired(per: dict[str, np.ndarray], a: str, b: str, mask: np.ndarray, theorems: list[str]) -> dict:
    """a − b on the queries of `mask`, in R@10 points, resampling theorems."""
    d = paired_intervals(per[a][mask], per[b][mask], clusters=[t for t, k in zip(theorems, mask) if k]).diff
    return {"a": a, "b": b, "ci": [round(100 * d[0], 1), round(100 * d[1], 1)]}


def report_once(per: dict[str, np.ndarray], chosen: str, shipped: str, halves: dict, theorems: list[str]) -> dict:
    """The chosen row and the shipped one on report, and their difference; nothing when the
    shipped one was chosen (report is scored once per recipe that would ship)."""
    if chosen == shipped:
        return {}
    rows = half_rows({n: per[n] for n in (chosen, shipped)}, {"report": halves["report"]}, theorems)
    return {**{n: v["report"] for n, v in rows.items()},
            "comparison": paired(per, chosen, shipped, halves["report"], theorems)}


def halves_fields(halves: dict, theorems: list[str]) -> dict:
    return {"n_queries": {h: int(m.sum()) for h, m in halves.items()},
            "n_theorems": {h: len({t for t, k in zip(theorems, m) if k}) for h, m in halves.items()},
            "bootstrap": {"resamples": N_RESAMPLES, "seed": SEED, "paired_over": "theorems"}}


def write_results(name: str, res: dict, render) -> None:
    stem = Path("benchmarks/results") / name
    write_json(stem.with_suffix(".json"), res)
    stem.with_suffix(".md").write_text(render(res))
    print(render(res))


def halves_text(res: dict, what: str) -> str:
    return (f"Select: {res['n_queries']['select']} queries of {res['n_theorems']['select']} theorems (the choice); "
            f"report: {res['n_queries']['report']} of {res['n_theorems']['report']}, scored once for the chosen "
            f"{what}. Brackets: 95% bootstrap intervals resampling theorems.")


def markdown_tail(res: dict, row_label: str, stays: str) -> list[str]:
    """The select table, its comparisons, the choice and report: what these benchmarks share."""
    L = ["", f"| {row_label} | select R@10 |", "|---|---|"]
    L += [f"| {n} | {v['select']['R@10']} {v['select']['ci']} |" for n, v in res["rows"].items()]
    L += ["", "Paired on select (points):", "", "| a | b | a − b |", "|---|---|---|"]
    L += [f"| {c['a']} | {c['b']} | {c['ci']} |" for c in res["select_comparisons"]]
    L += ["", f"Chosen on select: **{res['chosen_on_select']}**."]
    if res["report"]:
        rep = res["report"]
        L += ["", "On report (scored once):", "", f"| {row_label} | report R@10 |", "|---|---|"]
        L += [f"| {n} | {v['R@10']} {v['ci']} |" for n, v in rep.items() if n != "comparison"]
        c = rep["comparison"]
        L += ["", f"{c['a']} − {c['b']} on report: {c['ci']} points."]
    else:
        L += ["", f"{stays}; report is not scored again."]
    L += ["", f"Commit {res['git_commit']}; {res['budget']}. Command: `{res['command']}`"]
    return L


def start(doc: str) -> tuple[argparse.Namespace, str, float, Any]:
    """Flags, the commit (a dirty tree is refused before any work), the start time and the
    retriever training config: how each of these benchmarks begins."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--cache", default="runs/fusion-queries", help="where the members' rankings are kept")
    args = arguments(ap)
    commit = require_clean_tree(False)
    from prover.config import load_config
    from retriever.settings import RetrieverTrainConfig
    return args, commit, time.perf_counter(), load_config(RetrieverTrainConfig, args.config, [f"data.root={args.data}"])


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
    chosen = max(RECIPES, key=lambda n: (rows[n]["select"]["R@10"], n == SHIPPED))
    select_cmp = [paired(per, name, SHIPPED, halves["select"], theorems) for name in RECIPES if name != SHIPPED]
    res = {"benchmark": "fusion-queries", "command": "python " + " ".join(sys.argv), "git_commit": commit,
           "machine": machine(), "members": list(fc.members), "depth": fc.depth, "l2": fc.l2,
           "fit_queries": {g: len(fit[g]) for g in fit}, **halves_fields(halves, theorems),
           "rows": rows, "select_comparisons": select_cmp, "chosen_on_select": chosen,
           "report": report_once(per, chosen, SHIPPED, halves, theorems),
           "budget": f"CPU seconds {round(time.perf_counter() - t0)} here (member rankings cached in {args.cache}), "
                     "beyond the members' own training", "peak_rss_gib": round(peak_rss_gib(), 2)}
    write_results("fusion-queries-mathlib-src", res, markdown)


def markdown(res: dict) -> str:
    L = ["# The fusion's fitting queries: statements or tactic-level steps (leandojo-real halves)", "",
         f"Fusion: logistic regression over {', '.join(res['members'])} (top {res['depth']} each, l2 {res['l2']}), "
         f"fitted on random/val: {res['fit_queries']['statement']} statement-level queries, "
         f"{res['fit_queries']['tactic']} tactic-level step queries. " + halves_text(res, "recipe")]
    return "\n".join(L + markdown_tail(res, "fitted on", "The shipped recipe stays")) + "\n"


if __name__ == "__main__":
    main()
