"""`structure`: premises ranked by the operator-tree terms they share with a state, BM25-weighted.

Nothing is learned. Each premise's statement (binder types and conclusion) and each state's
goals are read into operator trees (optree.py); their terms (features.py:
leaf-to-root paths, subtree shapes, labels, variables abstracted) are weighted as BM25 weights
words, through the same `bm25s` index and posting scorer as the `bm25` baseline.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import numpy as np

from prover.data.corpus import Corpus
from retriever.base import RankedPremise, ScoringRetriever
from retriever.baselines.bm25 import BM25Config, PostingScorer
from retriever.structure.features import statement_terms
from retriever.structure.optree import Statement, state_trees, statement_trees

log = logging.getLogger(__name__)


_VARIABLE_PARTS = re.compile(r"V@|V|_|\.\d+|[()/,\s]")


def names_a_constant(term: str) -> bool:
    """Whether a term holds a constant or an operator, not only abstracted variables: a shape
    such as `V@(V)` (a variable applied to one) or the path `V/V@` is in most goals and in every
    premise whose statement is an applied variable (`m α`), so as a query term it matched such
    short premises to any goal (Aesop's `withConstAesopTraceNode` in unrelated top 10s)."""
    return bool(_VARIABLE_PARTS.sub("", term.split(":", 1)[-1]))


class StructureRetriever(ScoringRetriever):
    name = "structure"

    def __init__(self, corpus: Corpus, cfg: BM25Config | None = None) -> None:
        super().__init__(corpus)
        self.cfg = cfg or BM25Config()
        self.fallback_trees = 0
        self.trees = 0
        docs = [self._terms(statement_trees(p.args, p.goal)) for p in corpus.premises]
        import bm25s  # here: it pulls in scipy, and configs import the registry
        if not logging.getLogger().isEnabledFor(logging.DEBUG):
            logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.bm25 = bm25s.BM25(k1=self.cfg.k1, b=self.cfg.b, method=self.cfg.method)
        # a premise with no tree terms (an empty statement) still needs one token to index
        self.bm25.index([d or ["∅doc"] for d in docs], show_progress=False)
        self.scorer = PostingScorer(self.bm25)
        log.info("structure: indexed %d premises, %.2f%% of their trees with a fallback span",
                 len(docs), 100 * self.fallback_share)

    @property
    def fallback_share(self) -> float:
        """The share of the premise trees read so far with a span the parser read as leaves."""
        return self.fallback_trees / max(self.trees, 1)

    def _terms(self, s: Statement) -> list[str]:
        self.trees += len(s.trees)
        self.fallback_trees += sum(t.fallbacks > 0 for t in s.trees)
        return statement_terms(s)

    def file_free(self, hits: list[RankedPremise]) -> list[RankedPremise]:
        """The premises sharing a term with the goal. A short goal shares terms with few premises;
        the zero-score rest comes in corpus order (Aesop's first premises), which says nothing
        about the state and, with no file to limit the candidates, would reach the fusion's top."""
        return [h for h in hits if h.score > 0]

    def score(self, states: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(states), len(self.corpus)), dtype=np.float32)
        vocab = self.bm25.vocab_dict
        for i, state in enumerate(states):
            # the goals alone: a state's hypotheses mostly declare what the goal's terms are
            terms = statement_terms(state_trees(state[: self.cfg.max_query_chars]), hypotheses=False)
            known = [t for t in terms if t in vocab and names_a_constant(t)]
            if known:
                out[i] = self.scorer(known)
        return out
