"""Node embeddings of operator trees, scored by late interaction (issue 50's learned structure).

Each node of a normalized tree (features.py) is embedded from its own label, its three nearest
ancestors' labels (one embedding table per distance, so `+` under `=` differs from `=` under
`+`) and its first children's labels; a small MLP mixes them. A premise is scored against a
state as ColBERT scores a passage: each goal node of the state takes its best-matching premise
node, and the matches are averaged. Trained contrastively on state–premise pairs
(benchmarks/tried/structure_late_interaction.py); it re-ranks a first stage's candidates.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from retriever.structure.features import normalize
from retriever.structure.optree import Node, Statement

ANCESTORS = 4  # the node and its parent, grandparent and great-grandparent
CHILDREN = 4
PAD, UNK = 0, 1


def node_contexts(s: Statement, goals_only: bool, max_nodes: int) -> list[tuple[list[str], list[str]]]:
    """(the node's label and its ancestors', its children's labels) for each node of the
    statement's trees, goals first, at most `max_nodes`."""
    local = s.locals | frozenset().union(*(t.bound for t in s.trees)) if s.trees else s.locals
    out: list[tuple[list[str], list[str]]] = []
    trees = s.goals if goals_only else s.goals + s.hypotheses

    def visit(node: Node, up: list[str]) -> None:
        if len(out) >= max_nodes:
            return
        out.append(([node.label] + up[: ANCESTORS - 1], [c.label for c in node.children[:CHILDREN]]))
        for c in node.children:
            visit(c, [node.label] + up)

    for t in trees:
        visit(normalize(t.root, local), [])
    return out


class Vocab:
    def __init__(self, labels: Iterable[str], size: int) -> None:
        self.ids = {lab: i + 2 for i, (lab, _) in enumerate(Counter(labels).most_common(size - 2))}

    def __len__(self) -> int:
        return len(self.ids) + 2

    def __call__(self, label: str) -> int:
        return self.ids.get(label, UNK)


def tensors(contexts: Sequence[list[tuple[list[str], list[str]]]], vocab: Vocab, max_nodes: int
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, N, ANCESTORS) and (B, N, CHILDREN) label ids, 0-padded."""
    anc = torch.zeros(len(contexts), max_nodes, ANCESTORS, dtype=torch.long)
    kid = torch.zeros(len(contexts), max_nodes, CHILDREN, dtype=torch.long)
    for b, nodes in enumerate(contexts):
        for n, (up, children) in enumerate(nodes[:max_nodes]):
            for k, lab in enumerate(up):
                anc[b, n, k] = vocab(lab)
            for k, lab in enumerate(children):
                kid[b, n, k] = vocab(lab)
    return anc, kid


class NodeEncoder(nn.Module):
    def __init__(self, vocab_size: int, dim: int = 64) -> None:
        super().__init__()
        self.ancestors = nn.ModuleList(nn.Embedding(vocab_size, dim, padding_idx=PAD) for _ in range(ANCESTORS))
        self.children_ = nn.Embedding(vocab_size, dim, padding_idx=PAD)
        self.mix = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))

    def forward(self, anc: torch.Tensor, kid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Unit node vectors (B, N, dim) and the mask of real nodes (B, N)."""
        x = sum(emb(anc[..., k]) for k, emb in enumerate(self.ancestors))
        kmask = (kid != PAD).unsqueeze(-1).float()
        x = x + (self.children_(kid) * kmask).sum(2) / kmask.sum(2).clamp(min=1)
        return F.normalize(self.mix(x), dim=-1), anc[..., 0] != PAD


def late_interaction(q: torch.Tensor, qmask: torch.Tensor, p: torch.Tensor, pmask: torch.Tensor) -> torch.Tensor:
    """(Bq, Bp) scores: per query node its best premise node's similarity, averaged over the
    query's nodes."""
    sim = torch.einsum("qid,pjd->qpij", q, p)
    # -1, the least a cosine can be: a premise with no nodes matches nothing, without a huge loss
    sim = sim.masked_fill(~pmask[None, :, None, :], -1.0).amax(-1)  # (Bq, Bp, Nq)
    w = qmask[:, None, :].float()
    return (sim * w).sum(-1) / w.sum(-1).clamp(min=1)
