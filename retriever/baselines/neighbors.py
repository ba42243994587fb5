"""`neighbors`: the premises that the training proofs of the most similar states used.

Nothing here is learned. Every traced tactic of the training split is a document (its state
before, as lexical tokens) carrying the premises it used. A query state is matched against
them with BM25; the `k` nearest vote for their premises, each vote weighted by the match
score; premises nobody voted for follow in locality order (as in `usage`). k = 5 was chosen
on the validation splits (R@10 on random/val: 40.6 at k 5, 35.2 at 20, 31.1 at 50; on
leandojo-real/val 24.4, 23.8, 20.7; benchmarks/results/selection.md). This is the
k-nearest-neighbour premise selector of the ATP literature (MaSh, Kaliszyk & Urban 2015) with
BM25 as the similarity: states that look alike are proved with the same lemmas, which no
premise's own text says.

Callers pass training theorems only (the registry leaves out any theorem of the evaluated
split), or the retriever hands the benchmark its answers.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np

from prover.data.corpus import Corpus
from prover.data.pairs import gold_indices
from prover.data.theorem import Theorem
from retriever.base import Context, RankedPremise, Retriever, top_k
from retriever.baselines.priors import LocalityRetriever, evidence
from retriever.baselines.bm25 import PostingScorer
from retriever.baselines.lean_tokens import lean_tokens

log = logging.getLogger(__name__)


def voting_states(training_theorems: Iterable[Theorem], corpus: Corpus) -> tuple[list[str], list[np.ndarray]]:
    """Every training state whose tactic used a premise of the corpus, with those premises (a
    state whose proof used no known premise casts no vote)."""
    states: list[str] = []
    premises: list[np.ndarray] = []
    for thm in training_theorems:
        for tac in thm.traced_tactics:
            used = gold_indices(tac, corpus)
            if used:
                states.append(tac.state_before)
                premises.append(np.asarray(used, dtype=np.int64))
    if not states:
        raise ValueError("neighbors: the training theorems use no premise of the corpus")
    return states, premises


def tally(doc_premises: Sequence[np.ndarray], near: Sequence[int], weights: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(premises, their summed weight): each near training state votes its weight for every
    premise its tactic used."""
    used = np.concatenate([doc_premises[d] for d in near])
    weight = np.concatenate([np.full(len(doc_premises[d]), x) for d, x in zip(near, weights)])
    premises, slot = np.unique(used, return_inverse=True)
    return premises, np.bincount(slot, weights=weight, minlength=len(premises))


class NeighborUsageRetriever(Retriever):
    """Premises voted for by the `k` training states nearest (BM25) to the query state."""

    def __init__(self, corpus: Corpus, training_theorems: Iterable[Theorem], k: int = 5,
                 max_query_chars: int = 20_000, locality: LocalityRetriever | None = None) -> None:
        super().__init__(corpus)
        if k < 1:
            raise ValueError(f"neighbors needs k >= 1, not {k}")
        self.k = k
        self.name = "neighbors" if k == 5 else f"neighbors-{k}"
        self.max_query_chars = max_query_chars
        self.locality = locality or LocalityRetriever(corpus)  # shared within a fusion
        states, self.doc_premises = voting_states(training_theorems, corpus)
        docs = [lean_tokens(s[: self.max_query_chars]) for s in states]
        import bm25s  # as in retriever/baselines/bm25.py: scipy is slow to import
        if not logging.getLogger().isEnabledFor(logging.DEBUG):
            logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.bm25 = bm25s.BM25()
        self.bm25.index(docs, show_progress=False)
        self.scorer = PostingScorer(self.bm25)
        log.info("neighbors (k=%d) indexed %d training states", k, len(docs))

    def sparse_votes(self, state: str) -> tuple[np.ndarray, np.ndarray]:
        """(premises, their summed BM25 score over the k nearest training states that used
        them): the voted premises only. Nearest: the k best scores, ties to the earlier state."""
        vocab = self.bm25.vocab_dict
        toks = [t for t in lean_tokens(state[: self.max_query_chars]) if t in vocab]
        if not toks:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        sim = self.scorer(toks)
        near = [d for d in top_k(sim, self.k) if sim[d] > 0]
        if not near:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return tally(self.doc_premises, near, [float(sim[d]) for d in near])

    def votes(self, state: str) -> np.ndarray:
        """Each premise's summed BM25 score over the k nearest training states that used it."""
        out = np.zeros(len(self.corpus), dtype=np.float64)
        premises, v = self.sparse_votes(state)
        out[premises] = v
        return out

    def file_free(self, hits: list[RankedPremise]) -> list[RankedPremise]:
        return evidence(hits)  # the votes, not the locality order after them

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        """Voted premises by 1 + vote (ties to the lower index), then the rest in locality
        order: only the votes and the front of the locality order are touched."""
        if len(states) != len(contexts):
            raise ValueError(f"{len(states)} states but {len(contexts)} contexts")
        out = []
        for state, ctx in zip(states, contexts):
            premises, v = self.sparse_votes(state)
            best = np.lexsort((premises, -v))
            out.append(self.locality.ranked_after(ctx, k, premises[best], 1.0 + v[best]))
        return out
