"""Refitting the shipped fusion on other queries or members, chosen on leandojo-real/select and
scored once on report: rankings at a granularity (cached), the halves, paired differences and
the shared Markdown. Shared by benchmarks/tried/fusion_queries.py and benchmarks/tried/dense_neighbors.py.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from prover.benchmarking.tried.fusion_halves import arguments, cached_rankings, half_rows
from prover.benchmarking.harness import (N_RESAMPLES, SEED, choose_within_noise, corrections_markdown,
                                         paired_intervals)
from prover.data.dataset import Dataset
from prover.data.halves import half_keys
from prover.data.pairs import premise_queries
from prover.data.tactic_steps import tactic_level
from prover.utils.runinfo import require_clean_tree
from retriever.models.learned_fusion import rank_features


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


def choose_on_select(per: dict[str, np.ndarray], candidates: list[str], shipped: str, halves: dict,
                     theorems: list[str]) -> tuple[str, str]:
    """The candidate to ship and why, by the project's rule for close calls: the best on select
    replaces `shipped` only when their paired select interval lies above zero."""
    select = halves["select"]
    best = max(candidates, key=lambda n: (per[n][select].mean(), n == shipped))
    ci = paired(per, best, shipped, select, theorems)["ci"] if best != shipped else (0.0, 0.0)
    return choose_within_noise(shipped, best, ci)


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
    L += ["", f"Chosen on select: **{res['chosen_on_select']}**."
          + (f" ({res['chosen_why']})" if res.get("chosen_why") else "")]
    if res["report"]:
        rep = res["report"]
        L += ["", "On report (scored once):", "", f"| {row_label} | report R@10 |", "|---|---|"]
        L += [f"| {n} | {v['R@10']} {v['ci']} |" for n, v in rep.items() if n != "comparison"]
        c = rep["comparison"]
        L += ["", f"{c['a']} − {c['b']} on report: {c['ci']} points."]
    else:
        L += ["", f"{stays}; report is not scored again."]
    L += ["", f"Commit {res['git_commit']}; {res['budget']}. Command: `{res['command']}`"]
    L += corrections_markdown(res)
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
