"""BM25 over premise text (`bm25s`), the lexical baseline every learned retriever must beat."""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from prover.data.corpus import Corpus
from prover.data.premise import Premise
from retriever.base import ScoringRetriever
from retriever.baselines.lean_tokens import TOKENIZERS

log = logging.getLogger(__name__)


@dataclass
class BM25Config:
    tokenizer: str = "lean"  # lean | plain
    fields: list[str] = field(default_factory=lambda: ["name", "code"])  # name, code, args, goal
    k1: float = 1.5
    b: float = 0.75
    method: str = "lucene"
    max_query_chars: int = 20_000  # a 100 KB state would only add noise terms and time


def premise_text(p: Premise, fields: Sequence[str]) -> str:
    parts = {"name": p.full_name, "code": p.code, "args": p.args_text, "goal": p.goal}
    unknown = set(fields) - parts.keys()
    if unknown:
        raise ValueError(f"unknown BM25 field(s) {sorted(unknown)}; choose from {sorted(parts)}")
    return "\n".join(parts[f] for f in fields)


class PostingScorer:
    """bm25s' `get_scores` for one query, as one sparse column slice and product.

    bm25s stores each token's scores over the documents as a column of a CSC matrix (its
    `scores` dict); a query's scores are the sum of its tokens' columns, each distinct token
    counted once and weighted by how often the query repeats it (87 tokens a real state, 33
    distinct). scipy sums them in C: the columns of a real state hold about 1.5M postings over
    the tactic-level neighbour index, which `np.add.at` summed several times slower. The
    same float32 sums as bm25s.
    """

    def __init__(self, bm25) -> None:
        from scipy.sparse import csc_matrix  # here: scipy is slow to import and configs import this module
        s = bm25.scores
        self.bm25 = bm25
        self.matrix = csc_matrix((s["data"], s["indices"], s["indptr"]),
                                 shape=(s["num_docs"], len(s["indptr"]) - 1))

    def __call__(self, tokens: Sequence[str]) -> np.ndarray:
        """(num_docs,) float32 scores of the known `tokens` (callers drop unknown ones)."""
        counts = Counter(tokens)
        ids = np.asarray(self.bm25.get_tokens_ids(list(counts)), dtype=np.int64)
        times = np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
        out = np.asarray(self.matrix[:, ids] @ times, dtype=np.float32)
        if self.bm25.nonoccurrence_array is not None:  # bm25l / bm25+ only
            out += (self.bm25.nonoccurrence_array[ids] * times).sum()
        return out


class BM25Retriever(ScoringRetriever):
    def __init__(self, corpus: Corpus, cfg: BM25Config | None = None) -> None:
        super().__init__(corpus)
        self.cfg = cfg or BM25Config()
        if self.cfg.tokenizer not in TOKENIZERS:
            raise ValueError(f"unknown tokenizer {self.cfg.tokenizer!r}; choose from {sorted(TOKENIZERS)}")
        self.tokenize = TOKENIZERS[self.cfg.tokenizer]
        self.name = "bm25" if self.cfg.tokenizer == "lean" else f"bm25-{self.cfg.tokenizer}"
        docs = [self.tokenize(premise_text(p, self.cfg.fields)) for p in corpus.premises]
        import bm25s  # here, not at the top: it pulls in scipy (~0.3 s), and configs import this module
        if not logging.getLogger().isEnabledFor(logging.DEBUG):
            logging.getLogger("bm25s").setLevel(logging.WARNING)  # its import sets DEBUG on it
        self.bm25 = bm25s.BM25(k1=self.cfg.k1, b=self.cfg.b, method=self.cfg.method)
        self.bm25.index(docs, show_progress=False)
        self.scorer = PostingScorer(self.bm25)
        log.info("BM25 (%s tokens, fields %s) indexed %d premises",
                 self.cfg.tokenizer, self.cfg.fields, len(docs))

    def score(self, states: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(states), len(self.corpus)), dtype=np.float32)
        vocab = self.bm25.vocab_dict
        for i, s in enumerate(states):
            # bm25s raises on query tokens it has never seen; they carry no signal anyway.
            toks = [t for t in self.tokenize(s[: self.cfg.max_query_chars]) if t in vocab]
            if toks:
                out[i] = self.scorer(toks)
        return out
