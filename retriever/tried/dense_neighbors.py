"""`neighbors-cfr`: the premises that the training proofs of the nearest states used, nearest by CFR.

`neighbors-tactic` (retriever/baselines/neighbors.py) finds the training states nearest to the
query by BM25 over their tokens. Here the same tactic-level training states are embedded by
the trained CFR's state encoder and the nearest are found by cosine similarity (FAISS, exact
inner product). CFR was trained to put a state near the premises its tactic uses, so two states
near each other in its space tend to need the same premises, whatever their surface tokens
share. The `k` nearest vote for their premises, each vote weighted by exp(similarity / T) with
CFR's own temperature (relative to the nearest); premises nobody voted for follow in locality
order, as in `neighbors`.

Encoding the training states takes minutes on a CPU, so their vectors are kept beside the CFR
model (`state_vectors-<digest>.npy`, the digest covering the model and the states).
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from prover.data.corpus import Corpus
from prover.data.theorem import Theorem
from prover.utils.progress import progress_bar
from retriever.base import Context, RankedPremise, Retriever
from retriever.baselines.neighbors import tally, voting_states
from retriever.baselines.priors import LocalityRetriever, evidence

log = logging.getLogger(__name__)


class DenseNeighborRetriever(Retriever):
    """Premises voted for by the `k` training states nearest to the query in CFR's state space."""

    def __init__(self, corpus: Corpus, training_theorems: Iterable[Theorem], encoder, k: int = 5,
                 temperature: float = 0.05, locality: LocalityRetriever | None = None,
                 cache_dir: str | Path | None = None, model_sha1: str = "", batch_size: int = 256) -> None:
        super().__init__(corpus)
        if k < 1 or temperature <= 0:
            raise ValueError(f"neighbors-cfr needs k >= 1 and temperature > 0, not {k}, {temperature}")
        self.name = "neighbors-cfr"
        self.encoder, self.k, self.temperature = encoder, k, temperature
        self.locality = locality or LocalityRetriever(corpus)
        states, self.doc_premises = voting_states(training_theorems, corpus)
        digest = hashlib.sha1(model_sha1.encode())
        for s in states:
            digest.update(s.encode("utf-8"))
            digest.update(b"\0")
        cache = Path(cache_dir) / f"state_vectors-{digest.hexdigest()[:16]}.npy" if cache_dir else None
        if cache is not None and cache.exists():
            vectors = np.load(cache)
        else:
            parts = [encoder.encode_states(states[lo: lo + batch_size], batch_size).numpy()
                     for lo in progress_bar(range(0, len(states), batch_size), desc="neighbors-cfr: encode training states",
                                            unit="batch")]
            vectors = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
            if cache is not None:
                np.save(cache, vectors)
        import faiss
        self.index = faiss.IndexFlatIP(vectors.shape[1])
        self.index.add(vectors)
        log.info("neighbors-cfr (k=%d) indexed %d training states", k, len(states))

    def sparse_votes_batch(self, states: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per state: (premises, their summed vote over the k nearest training states)."""
        queries = np.ascontiguousarray(self.encoder.encode_states(list(states)).numpy(), dtype=np.float32)
        sims, ids = self.index.search(queries, self.k)
        out = []
        for sim, near in zip(sims, ids):
            keep = near >= 0
            sim, near = sim[keep], near[keep]
            if not len(near):
                out.append((np.zeros(0, dtype=np.int64), np.zeros(0)))
                continue
            w = np.exp((sim - sim.max()) / self.temperature)
            out.append(tally(self.doc_premises, near, w))
        return out

    def file_free(self, hits: list[RankedPremise]) -> list[RankedPremise]:
        return evidence(hits)  # the votes, not the locality order after them

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        if len(states) != len(contexts):
            raise ValueError(f"{len(states)} states but {len(contexts)} contexts")
        if not states:
            return []
        out = []
        for (premises, v), ctx in zip(self.sparse_votes_batch(states), contexts):
            best = np.lexsort((premises, -v))
            out.append(self.locality.ranked_after(ctx, k, premises[best], 1.0 + v[best]))
        return out
