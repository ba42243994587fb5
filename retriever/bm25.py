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
from retriever.lean_tokens import TOKENIZERS

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


def bm25_scores(bm25, tokens: Sequence[str]) -> np.ndarray:
    """bm25s' `get_scores` over known `tokens`, each distinct token's postings added once,
    times its count: a state repeats its tokens (87 per query, 33 distinct, on real states),
    and bm25s adds every repeat's whole posting list again. Several times faster at batch 1
    (a local profile); the same scores up to float rounding."""
    counts = Counter(tokens)
    ids = np.asarray(bm25.get_tokens_ids(list(counts)), dtype=np.int64)
    times = np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
    s = bm25.scores
    starts, ends = s["indptr"][ids], s["indptr"][ids + 1]
    docs = np.concatenate([s["indices"][a:b] for a, b in zip(starts, ends)])
    values = np.concatenate([s["data"][a:b] * c for a, b, c in zip(starts, ends, times)])
    out = np.zeros(s["num_docs"], dtype=np.float32)
    np.add.at(out, docs, values)
    if bm25.nonoccurrence_array is not None:  # bm25l / bm25+ only
        out += (bm25.nonoccurrence_array[ids] * times).sum()
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
        log.info("BM25 (%s tokens, fields %s) indexed %d premises",
                 self.cfg.tokenizer, self.cfg.fields, len(docs))

    def score(self, states: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(states), len(self.corpus)), dtype=np.float32)
        vocab = self.bm25.vocab_dict
        for i, s in enumerate(states):
            # bm25s raises on query tokens it has never seen; they carry no signal anyway.
            toks = [t for t in self.tokenize(s[: self.cfg.max_query_chars]) if t in vocab]
            if toks:
                out[i] = bm25_scores(self.bm25, toks)
        return out
