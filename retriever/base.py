"""The one interface every premise retriever implements.

`retrieve(states, k, contexts)` ranks the premises a theorem may use (its accessible
premises) for each proof state. BM25, CFR, CFR+CAR and the baselines all answer through
it, so the evaluation harness, the prover's retriever actor and the search service never
need to know which one they hold.

A context is where the theorem lives (`TheoremContext`: a file of the corpus and a position)
or, for a file outside the corpus, what it imports (`ImportsContext`); either says which
premises are accessible through `accessible(corpus)`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prover.data.corpus import Corpus
from prover.data.premise import Pos, Premise


@dataclass(frozen=True)
class TheoremContext:
    """Where the theorem being proved lives; decides which premises are accessible."""

    file_path: str
    position: Pos

    def accessible(self, corpus: Corpus) -> np.ndarray:
        return corpus.accessible_mask(self.file_path, self.position)


@dataclass(frozen=True)
class ImportsContext:
    """A file outside the corpus (say, one a user is writing) that imports `files` (corpus
    paths): it may use their premises and those of everything they import."""

    files: tuple[str, ...]

    def accessible(self, corpus: Corpus) -> np.ndarray:
        return corpus.imports_mask(self.files)


Context = TheoremContext | ImportsContext


@dataclass(frozen=True)
class RankedPremise:
    index: int
    premise: Premise
    score: float


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best finite scores, best first; ties go to the lower corpus index,
    so a ranking never depends on how a partition happened to order equal scores."""
    cand = np.flatnonzero(np.isfinite(scores))
    if 0 < k < cand.size and cand.size > 16 * k:
        # torch's top-k finds the k-th best score several times faster than np.partition
        # over a corpus-sized row (a local profile),
        # and every member of a fusion pays it once per query. A row with few finite scores
        # (a fused head, an approximate index's hits) is sorted as it is: a full-row top-k
        # would be most of its cost (issue 63).
        import torch  # here: the lexical baselines import this module without needing torch
        row = scores if scores.flags.c_contiguous and scores.flags.writeable else scores.copy()
        kth = torch.topk(torch.from_numpy(row), k, sorted=False).values.min().item()
        if kth == kth:  # NaN never compares; keep every candidate then
            cand = cand[scores[cand] >= kth]
    order = np.lexsort((cand, -scores[cand]))
    return cand[order][:k]


class Retriever(ABC):
    """Ranks accessible premises of `corpus` for proof states."""

    name: str = "retriever"

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus

    @abstractmethod
    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        """For each state, the k best premises (accessible from its context, if given)."""

    def file_free(self, hits: list[RankedPremise]) -> list[RankedPremise]:
        """Of this retriever's answer to a query with no file (no TheoremContext), the part the
        state itself earned: all of it here. A prior that orders by the query's file (locality,
        usage, the neighbours' tail) keeps only its own evidence: with no file its file order
        is the corpus's order (Aesop's first premises), which says nothing about the state."""
        return hits

    def _ranked(self, scores: np.ndarray, k: int) -> list[RankedPremise]:
        return [RankedPremise(int(i), self.corpus.premises[i], float(scores[i]))
                for i in top_k(scores, k)]


class ScoringRetriever(Retriever):
    """A retriever that scores every premise of the corpus for a batch of states."""

    @abstractmethod
    def score(self, states: Sequence[str]) -> np.ndarray:
        """A (len(states), len(corpus)) array of scores, higher is better."""

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        if len(states) != len(contexts):
            raise ValueError(f"{len(states)} states but {len(contexts)} contexts")
        scores = self.score(states)
        out = []
        for row, ctx in zip(scores, contexts):
            if ctx is not None:
                row = np.where(ctx.accessible(self.corpus), row, -np.inf)
            out.append(self._ranked(row, k))
        return out
