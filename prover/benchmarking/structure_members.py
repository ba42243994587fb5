"""What benchmarks/structure_retrieval.py and structure_late_interaction.py share: a query's
R@1, R@10 and MRR from a ranking, and the fusion's rankings over cached member rankings."""
from __future__ import annotations

from typing import Any


def per_query(ranked: list, gold: list) -> dict[str, float]:
    g = set(gold)
    hits = [i for i, c in enumerate(ranked) if c in g]
    return {"R@1": len(g & set(ranked[:1])) / len(g), "R@10": len(g & set(ranked[:10])) / len(g),
            "MRR": 1.0 / (hits[0] + 1) if hits else 0.0}


def fusion_rankings(fit: dict, scored: dict, members: list[str], cfg: Any) -> list[list[int]]:
    """The fusion over `members`, fitted on the cached rankings `fit` (as train-fusion fits
    it), ordering each query of `scored`."""
    from prover.benchmarking.fusion_members import examples
    from retriever.models.learned_fusion import fit_fusion, order
    depth = cfg.fusion.depth
    model = fit_fusion([e[1:3] for e in examples(fit, members, depth)], members, depth, cfg.fusion.l2)
    return [order(c, model.score(f)).tolist() for c, f, _, _ in examples(scored, members, depth)]
