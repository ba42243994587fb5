"""Member rankings of the fusion on the validation splits (cached per member), their features and
R@10. Shared by benchmarks/fusion_selection.py and fusion_ablation.py.
"""
from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf


def rankings(cfg, split: str, members: list[str], cache: Path):
    """Per member, per query, its top-depth corpus indices (cached); and the gold sets."""
    from retriever.training.train_fusion import member_rankings
    path = cache / f"{split.replace('/', '-')}.pkl"
    have = pickle.loads(path.read_bytes()) if path.exists() else {"members": {}, "gold": None}
    for m in members:
        if m in have["members"]:
            continue
        c = cfg.copy()
        name = m
        if m.startswith("neighbors-") and m.split("-")[1].isdigit():  # neighbors at another k: the registry reads retriever.neighbors_k
            OmegaConf.update(c, "retriever", {"neighbors_k": int(m.split("-")[1])}, force_add=True)
            name = "neighbors"
        c.fusion.members = [name]
        c.fusion.max_queries = None
        ranks, gold = member_rankings(c, split)
        have["members"][m] = [r[0] for r in ranks]
        have["gold"] = [sorted(g) for g in gold]
        cache.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(have))
    if "theorems" not in have:  # each query's theorem: intervals resample theorems
        from prover.data.dataset import Dataset
        from prover.data.pairs import premise_queries
        ds = Dataset(cfg.data.root)
        have["theorems"] = [q.theorem for q in premise_queries(ds.theorems(split), ds.corpus(), ds.skips)[0]]
        path.write_bytes(pickle.dumps(have))
    return have


def examples(d: dict, members: list[str], depth: int) -> list[tuple]:
    """Per query of cached rankings `d`: the members' candidates, their features, which are
    gold, and the gold set."""
    from retriever.models.learned_fusion import rank_features
    out = []
    for q, gold in enumerate(d["gold"]):
        cand, feats = rank_features([d["members"][m][q] for m in members], depth)
        out.append((cand, feats, np.isin(cand, gold), gold))
    return out


def recall10(ranked, gold) -> float:
    return len(set(gold) & set(list(ranked)[:10])) / len(gold)
