"""`fusion`: a logistic-regression ranker over where several retrievers put each premise.

Reciprocal-rank fusion (retriever/baselines/hybrid.py) weighs every member alike and every rank by one
fixed curve. Here the members' ranks are features and a linear model learns how much each
member's top ranks are worth, from queries of a validation split (never the test split).
The candidates are the union of the members' top `depth`; a candidate's features are, per
member, 1/rank, whether the member listed it at all, and log(rank) (rank = depth + 1 when it
did not). One logistic regression, trained with L-BFGS on "is this candidate a gold premise",
scores them; that is all that is learned, so it trains in seconds on a few thousand queries.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from retriever.base import Context, RankedPremise, Retriever, TheoremContext

FEATURES_PER_MEMBER = 3


def rank_features(rankings: Sequence[Sequence[int]], depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidates (corpus indices, in order of first appearance across the members' lists) and
    their (n_candidates, FEATURES_PER_MEMBER * n_members) features."""
    pos: dict[int, int] = {}
    for ranking in rankings:
        for idx in ranking[:depth]:
            pos.setdefault(idx, len(pos))
    ranks = np.full((len(pos), len(rankings)), depth + 1, dtype=np.float64)
    for m, ranking in enumerate(rankings):
        for r, idx in enumerate(ranking[:depth], start=1):
            ranks[pos[idx], m] = r
    feats = np.concatenate([1.0 / ranks, (ranks <= depth).astype(np.float64), np.log(ranks)], axis=1)
    return np.fromiter(pos, dtype=np.int64, count=len(pos)), feats


@dataclass
class FusionModel:
    """The learned weights, with the member names and the depth their features assume."""

    members: list[str]
    depth: int
    mean: list[float]  # feature standardisation, from the training candidates
    std: list[float]
    weights: list[float]
    bias: float

    def score(self, feats: np.ndarray) -> np.ndarray:
        z = (feats - np.asarray(self.mean)) / np.asarray(self.std)
        return z @ np.asarray(self.weights) + self.bias

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> FusionModel:
        return cls(**json.loads(Path(path).read_text()))


def fit_fusion(examples: Sequence[tuple[np.ndarray, np.ndarray]], members: Sequence[str], depth: int,
               l2: float = 1e-3) -> FusionModel:
    """Logistic regression over every (features, is-gold labels) query example."""
    import torch
    x = np.concatenate([f for f, _ in examples])
    y = np.concatenate([lab for _, lab in examples]).astype(np.float32)
    if not y.any():
        raise ValueError("fusion training: no gold premise among any member's candidates")
    mean, std = x.mean(0), x.std(0) + 1e-9
    xt = torch.tensor((x - mean) / std, dtype=torch.float32)
    yt = torch.tensor(y)
    w = torch.zeros(x.shape[1], requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=500, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(xt @ w + b, yt) + l2 * (w ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return FusionModel(list(members), depth, mean.tolist(), std.tolist(),
                       w.detach().tolist(), float(b.detach()))


@dataclass(frozen=True)
class SharedMaskContext(TheoremContext):
    """A theorem context whose accessibility mask is computed once, for all members."""

    mask: np.ndarray = field(default=None, compare=False, repr=False)

    def accessible(self, corpus) -> np.ndarray:
        return self.mask


def order(candidates: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Candidates best first; ties keep their first-appearance order (the first member's first)."""
    return candidates[np.lexsort((np.arange(len(candidates)), -scores))]


class LearnedFusionRetriever(Retriever):
    def __init__(self, members: Sequence[Retriever], model: FusionModel, name: str = "fusion") -> None:
        if len(members) != len(model.members):
            raise ValueError(f"the fusion model has {len(model.members)} members, got {len(members)} retrievers")
        super().__init__(members[0].corpus)
        self.members = list(members)
        self.model = model
        self.name = name

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        # Members filter by accessibility themselves. Ranks past the model's depth read as
        # "not listed", as in training; asking for k keeps a caller that wants more from
        # getting a short list.
        depth = max(self.model.depth, k)
        # One accessibility mask per query for all members (each would compute its own).
        # Members run one after another: they hold the GIL for much of their work (bm25s'
        # Python loops, tokenizers), and threads were slower at batch 1 in a local profile
        # (leandojo-real/val, 2 cores).
        shared = [SharedMaskContext(c.file_path, c.position, c.accessible(self.corpus))
                  if isinstance(c, TheoremContext) else c for c in contexts]
        hits = [m.retrieve(states, depth, shared) for m in self.members]
        out = []
        for q in range(len(states)):
            # No file (no context, or only imports): a member that orders by the file keeps
            # only its own evidence. Its other features are then alike for every candidate,
            # so the linear score ranks by the members that read the state (bm25, CFR, the
            # neighbours' votes), as if the file-bound members were left out.
            filed = isinstance(contexts[q], TheoremContext)
            rankings = [[h.index for h in (member[q] if filed else m.file_free(member[q]))]
                        for m, member in zip(self.members, hits)]
            cand, feats = rank_features(rankings, self.model.depth)
            scores = self.model.score(feats)
            best = order(cand, scores)[:k]
            by_idx = dict(zip(cand.tolist(), scores.tolist()))
            chosen = set(best.tolist())
            # Past the candidates (a k above depth): the first member's order.
            tail = [i for i in rankings[0] if i not in chosen][: k - len(best)]
            out.append([RankedPremise(int(i), self.corpus.premises[i], by_idx[int(i)]) for i in best]
                       + [RankedPremise(i, self.corpus.premises[i], float("-inf")) for i in tail])
        return out
