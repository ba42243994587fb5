"""The no-learning fusion on the real halves: member rankings (cached), their features, R@10 per
half with theorem-level intervals, and the flags. Shared by benchmarks/tried/cfr_negatives.py,
fusion_queries.py, ltr_fusion.py and dense_neighbors.py.
"""
from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import N_RESAMPLES, SEED, mean_interval
from prover.data.dataset import Dataset
from prover.data.pairs import premise_queries
from retriever.models.learned_fusion import rank_features


MEMBERS = ["bm25", "usage", "locality", "neighbors", "neighbors-tactic"]
DEPTH = 100


def cached_rankings(cfg, split: str, path: Path) -> list[list[list[int]]]:
    """`member_rankings(cfg, split)`, kept in `path` (computing them takes minutes)."""
    import pickle

    from retriever.training.train_fusion import member_rankings
    if path.exists():
        return pickle.loads(path.read_bytes())
    ranks, _ = member_rankings(cfg, split)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(ranks))
    return ranks


def rankings(cfg, split: str, cache: Path) -> tuple[list[list[list[int]]], list, list[str]]:
    """The members' rankings of the split's queries (cached: computing them takes minutes)."""
    ranks = cached_rankings(cfg, split, cache / f"{split.replace('/', '-')}.pkl")
    ds = Dataset(cfg.data.root)
    queries, _ = premise_queries(ds.theorems(split), ds.corpus(), ds.skips)
    return ranks, queries, [f"{q.file_path}::{q.theorem}" for q in queries]


def premise_features(corpus, usage: np.ndarray, cand: np.ndarray, query) -> np.ndarray:
    kinds = ("theorem", "lemma", "def", "instance", "structure", "class", "inductive", "abbrev")
    rows = []
    for i in cand.tolist():
        p = corpus.premises[i]
        rows.append([float(p.path == query.file_path), np.log1p(usage[i]), np.log1p(len(p.code)),
                     *(float(p.kind == k) for k in kinds)])
    return np.asarray(rows, dtype=np.float64)


def examples(ranks, queries, corpus, usage, with_premise: bool):
    out = []
    for r, q in zip(ranks, queries):
        cand, feats = rank_features(r, DEPTH)
        if with_premise:
            feats = np.concatenate([feats, premise_features(corpus, usage, cand, q)], axis=1)
        out.append((cand, feats, np.isin(cand, q.gold), set(q.gold)))
    return out


def recall10(ranked: np.ndarray, gold: set) -> float:
    return len(gold & set(ranked[:10].tolist())) / len(gold)


def half_rows(per: dict[str, np.ndarray], halves: dict[str, np.ndarray], theorems: list[str]) -> dict:
    """Each row's R@10 on each half, with its interval resampling theorems."""
    rows: dict = {}
    for half, mask in halves.items():
        clusters = [t for t, k in zip(theorems, mask) if k]
        for name, r in per.items():
            lo, hi = mean_interval(r[mask], clusters=clusters)
            rows.setdefault(name, {})[half] = {"R@10": round(100 * float(r[mask].mean()), 1),
                                               "ci": [round(100 * lo, 1), round(100 * hi, 1)]}
    return rows


def split_fields(halves: dict[str, np.ndarray], theorems: list[str]) -> dict:
    """What every results file of these benchmarks says about the fusion and the halves."""
    return {"members": MEMBERS, "depth": DEPTH, "fitted_on": "random/val",
            "n_queries": {h: int(m.sum()) for h, m in halves.items()},
            "n_theorems": {h: len({t for t, k in zip(theorems, m) if k}) for h, m in halves.items()},
            "bootstrap": {"resamples": N_RESAMPLES, "seed": SEED, "paired_over": "theorems"}}


def arguments(ap: argparse.ArgumentParser) -> argparse.Namespace:
    """The shared flags (the training config, the data), parsed, with logging set up."""
    ap.add_argument("--config", default="configs/retriever/cpu.yaml")
    ap.add_argument("--data", default=os.environ.get("PROVER_DATA", "../shared/data") + "/mathlib-src")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    return args


def fusion_config(args: argparse.Namespace):
    """The training config with the fusion's members set to the no-learning ones (all queries)."""
    from omegaconf import OmegaConf

    from prover.config import load_config
    from retriever.settings import RetrieverTrainConfig
    cfg = load_config(RetrieverTrainConfig, args.config, [f"data.root={args.data}"])
    OmegaConf.update(cfg, "fusion.members", MEMBERS)
    OmegaConf.update(cfg, "fusion.max_queries", None)
    OmegaConf.update(cfg, "fusion.depth", DEPTH)
    return cfg
