"""Parameters and FLOPs per query, as the retrieval benchmark reports them."""
from __future__ import annotations

import numpy as np
import torch

from prover.data.pairs import PremiseQuery
from retriever.base import RankedPremise, Retriever
from retriever.evaluation.cost import retriever_cost


class LinearRetriever(Retriever):
    """Encodes a state with one Linear layer and scores a fixed premise matrix."""

    name = "linear"

    def __init__(self) -> None:
        self.encoder = torch.nn.Linear(16, 8)  # 16·8 weights + 8 biases = 136 parameters
        self.premise_vectors = np.ones((1000, 8), dtype=np.float32)

    def retrieve(self, states, k, contexts) -> list[list[RankedPremise]]:
        self.encoder(torch.ones(len(states), 16))
        return [[] for _ in states]


class Wrapper(Retriever):
    name = "wrapper"

    def __init__(self, inner: Retriever) -> None:
        self.first_stage = inner

    def retrieve(self, states, k, contexts):
        return self.first_stage.retrieve(states, k, contexts)


def test_cost_counts_torch_flops_plus_the_index_search():
    q = [PremiseQuery("t", 0, "F.lean", (1, 1), "⊢ True", (0,))] * 3
    cost = retriever_cost(LinearRetriever(), q)
    assert cost["parameters"] == 136
    # Linear: 2·16·8 = 256 FLOPs per query; search: 2·1000·8 = 16,000.
    assert cost["flops_per_query"] == 256 + 16_000
    assert cost["gflops_per_query"] == 1.626e-05
    wrapped = retriever_cost(Wrapper(LinearRetriever()), q)
    assert wrapped == cost  # wrapped retrievers are looked into, not counted twice
