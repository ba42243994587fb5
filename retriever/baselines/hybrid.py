"""Hybrid retrieval by reciprocal rank fusion (Cormack et al., 2009), e.g. BM25 + CFR.

Each member retriever ranks its top-`depth` accessible premises; a premise's fused score is
Σ_i w_i / (k_rrf + rank_i) over the members that ranked it (ranks from 1). Only ranks are
fused, so members with incomparable score scales (BM25, cosine) combine without calibration.
Ties go to the better rank in the first member's list (absent counts as last), then to the
lower corpus index, so a fused ranking is reproducible.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from retriever.base import RankedPremise, Retriever, TheoremContext


def rrf_fuse(rankings: Sequence[Sequence[int]], weights: Sequence[float],
             k_rrf: float = 60) -> list[tuple[int, float]]:
    """(corpus index, fused score) pairs, best first, for one query's member rankings."""
    scores: dict[int, float] = {}
    for w, ranking in zip(weights, rankings, strict=True):
        for rank, idx in enumerate(ranking, start=1):
            scores[idx] = scores.get(idx, 0.0) + w / (k_rrf + rank)
    first = {idx: rank for rank, idx in enumerate(rankings[0], start=1)} if rankings else {}
    order = sorted(scores, key=lambda i: (-scores[i], first.get(i, math.inf), i))
    return [(i, scores[i]) for i in order]


class HybridRetriever(Retriever):
    def __init__(self, retrievers: Sequence[Retriever], k_rrf: float = 60, depth: int = 100,
                 weights: Sequence[float] | None = None, name: str = "hybrid") -> None:
        if not retrievers:
            raise ValueError("a hybrid retriever needs at least one member")
        corpus = retrievers[0].corpus
        if any(r.corpus is not corpus for r in retrievers):
            raise ValueError("hybrid members must share one corpus (corpus indices are fused)")
        weights = [1.0] * len(retrievers) if weights is None else list(weights)
        if len(weights) != len(retrievers):
            raise ValueError(f"{len(weights)} weights for {len(retrievers)} retrievers")
        super().__init__(corpus)
        self.retrievers = list(retrievers)
        self.k_rrf = k_rrf
        self.depth = depth
        self.weights = weights
        self.name = name

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[TheoremContext | None]) -> list[list[RankedPremise]]:
        # Members filter by accessibility themselves; asking for at least k keeps a caller
        # that wants more than `depth` premises from getting a short list.
        depth = max(self.depth, k)
        member_hits = [r.retrieve(states, depth, contexts) for r in self.retrievers]
        out = []
        for q in range(len(states)):
            fused = rrf_fuse([[h.index for h in hits[q]] for hits in member_hits], self.weights,
                             self.k_rrf)
            out.append([RankedPremise(i, self.corpus.premises[i], s) for i, s in fused[:k]])
        return out
