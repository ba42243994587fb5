"""The informal retriever: BM25 over what a declaration says in words, the query expanded
through the identification clouds (`clouds.py`).

Each premise is indexed as `text.declaration_words` (name parts, statement notation in words,
docstring words); a query (English, LaTeX, a theorem's common name or a Lean-like term) becomes
weighted terms (`Clouds.expand`) and a premise's score is the weighted sum of its BM25 term
scores. `matched(query, indices)` says which query words each hit matched, through which cloud.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from prover.data.corpus import Corpus
from prover.data.errors import UserInputError
from prover.data.jsonio import iter_jsonl
from prover.data.module_docs import aliases
from retriever.base import ScoringRetriever
from retriever.informal.clouds import Clouds, formal_words
from retriever.informal.settings import InformalConfig
from retriever.informal.text import declaration_words, words

log = logging.getLogger(__name__)


def resolve_docs(corpus_folder: str | Path | None, docs: str | None,
                 cache: str | Path = "runs/corpora") -> str | None:
    """The corpus whose `doc` fields are joined: `docs` as given (a corpus folder or file, or a
    folder of Lean sources, built once into `cache` by `prover data corpus`), else the real
    sources beside a dataset (`<corpus_folder>/leandojo-real/source`, as mathlib-src has them),
    else None."""
    if docs is None:
        source = Path(corpus_folder) / "leandojo-real" / "source" if corpus_folder else None
        if source is None or not source.is_dir():
            return None
        docs = str(source)
    path = Path(docs)
    if not path.exists():
        raise UserInputError(f"informal docs {path} does not exist: pass a corpus folder made by "
                             f"`prover data corpus`, or a folder of Lean sources")
    if path.is_dir() and not any((path / n).is_file() for n in ("corpus.jsonl", "corpus.jsonl.gz")):
        from prover.data.project_corpus import project_corpus
        return str(project_corpus(path, cache, progress=False))
    return str(path)


@dataclass
class Docs:
    """What a docs corpus says in words, by full name: doc comments, the module docs' bullets
    naming a declaration (aliases) and its file's title."""

    doc: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    title: dict[str, str] = field(default_factory=dict)


def read_docs(path: str | Path) -> Docs:
    """The docs of a corpus.jsonl (or its folder) built by `prover data corpus`."""
    p = Path(path)
    if p.is_dir():
        p = next((p / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (p / n).is_file()), p / "corpus.jsonl")
    if not p.is_file():
        raise UserInputError(f"informal.docs: {p} is not a corpus.jsonl; make one with "
                             f"`prover data corpus SOURCE --out DIR` and point informal.docs at DIR")
    out = Docs()
    for _, row in iter_jsonl(p):
        names = [prem["full_name"] for prem in row.get("premises", [])]
        for prem in row.get("premises", []):
            if prem.get("doc"):
                out.doc[prem["full_name"]] = prem["doc"]
        if row.get("module_docs"):
            bullets, title = aliases(row["module_docs"], names)
            out.aliases.update(bullets)
            if title:
                out.title.update(dict.fromkeys(names, title))
    return out


class InformalRetriever(ScoringRetriever):
    name = "informal"

    def __init__(self, corpus: Corpus, cfg: InformalConfig | None = None,
                 hidden: Collection[str] = (), clouds: bool = True, say=log.warning) -> None:
        """`hidden`: names whose docstring is neither indexed nor learned from (a benchmark's
        queries); `clouds=False`: no query expansion (BM25 over the same text, the ablation);
        `say`: where the one line goes when the dense member was asked for and cannot run."""
        super().__init__(corpus)
        self.cfg = cfg = cfg or InformalConfig()
        extra = read_docs(cfg.docs) if cfg.docs else Docs()
        hidden = set(hidden)
        self.docs = [("" if p.full_name in hidden else p.doc or extra.doc.get(p.full_name, ""))
                     for p in corpus.premises]
        self.aliases = [extra.aliases.get(p.full_name, []) for p in corpus.premises]
        self.titles = [extra.title.get(p.full_name, "") for p in corpus.premises]
        self.dense = None  # (encoder, index of the embeddings), when cfg.dense names a model
        self.dense_note = ""  # the one line said when the dense member was asked for and cannot run
        if cfg.dense:
            self.dense_note = dense_member(self, cfg)
            if self.dense_note:
                say(self.dense_note)
                if not cfg.dense_build:  # asked for only if at hand: the words alone, as they ship alone
                    default = InformalConfig()
                    self.cfg = cfg = replace(cfg, dense=None, alias_weight=default.alias_weight,
                                             title_weight=default.title_weight)
        texts = [declaration_words(p.full_name, p.code, d, cfg.name_weight, cfg.doc_weight)
                 + words(" ".join(a)) * cfg.alias_weight + words(t) * cfg.title_weight
                 for p, d, a, t in zip(corpus.premises, self.docs, self.aliases, self.titles)]
        self.clouds = (Clouds.learn(((words(d), formal_words(p.full_name, p.code))
                                     for p, d in zip(corpus.premises, self.docs) if d),
                                    cfg.cloud_size, cfg.cloud_min_pairs) if clouds else Clouds())
        if not clouds:
            self.name = "informal-no-clouds"
        import bm25s  # here: it pulls in scipy, and configs import the settings beside this module
        from retriever.baselines.bm25 import PostingScorer
        if not logging.getLogger().isEnabledFor(logging.DEBUG):
            logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.bm25 = bm25s.BM25(k1=cfg.k1, b=cfg.b, method="lucene")
        self.bm25.index([t or ["∅"] for t in texts], show_progress=False)
        self.matrix = PostingScorer(self.bm25).matrix.tocsc()
        self.names = name_matrix([p.full_name for p in corpus.premises], self.bm25.vocab_dict,
                                 cfg.namespace_weight)
        log.info("informal index: %d premises, %d with a docstring, %d with a module docs alias, "
                 "%d with a title; clouds from %d pairs", len(texts), sum(bool(d) for d in self.docs),
                 sum(bool(a) for a in self.aliases), sum(bool(t) for t in self.titles), self.clouds.pairs)

    def dense_texts(self) -> list[str]:
        """Each premise's text as the dense member reads it (`dense.declaration_text`): name,
        docstring, the module docs' bullets naming it, statement. Not the file's title: given
        to every declaration of a file it would re-encode them all for a share the lexical
        member already carries."""
        from retriever.informal.dense import declaration_text
        return [declaration_text(p.full_name, p.code, d, a)
                for p, d, a in zip(self.corpus.premises, self.docs, self.aliases)]

    def lexical_row(self, query: str) -> np.ndarray:
        """The lexical member's scores of every premise (-inf: matched no query word)."""
        ids, weights, _, _ = self.terms(query)
        if not len(ids):
            return np.full(len(self.corpus), -np.inf, dtype=np.float32)
        row = self.matrix[:, ids] @ weights
        if self.cfg.name_match and row.max() > 0:
            covered = self.names[:, ids] @ np.minimum(weights, 1.0)
            row = row + self.cfg.name_match * float(row.max()) * covered
        return np.where(row > 0, row, -np.inf).astype(np.float32)

    def dense_row(self, query: str) -> np.ndarray:
        """The dense member's scores: the cosine similarity of the query's and a premise's
        embeddings for the query's `fusion_depth` nearest premises (what the fusion reads), -inf
        for the others."""
        encoder, index = self.dense
        ids, scores = index.search(encoder.encode([query])[0], self.cfg.fusion_depth)
        row = np.full(len(self.corpus), -np.inf, dtype=np.float32)
        row[ids] = scores
        return row

    def terms(self, query: str) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
        """The query's known terms: vocabulary ids, weights, the terms and their sources."""
        expanded = self.clouds.expand(query, self.cfg.cloud_weight, self.cfg.lexicon_weight,
                                      self.cfg.named_weight, self.cfg.query_conventions)
        vocab = self.bm25.vocab_dict
        known = [(t, w, src) for t, (w, src) in expanded.items() if t in vocab]
        ids = np.asarray([vocab[t] for t, _, _ in known], dtype=np.int64)
        return (ids, np.asarray([w for _, w, _ in known], dtype=np.float32),
                [t for t, _, _ in known], [s for _, _, s in known])

    def score(self, states: Sequence[str]) -> np.ndarray:
        """Scores; a premise that matches no query word gets -inf, so it is never a hit (a
        query of two rare words has fewer than k answers, not k padded with arbitrary ones)."""
        out = np.full((len(states), len(self.corpus)), -np.inf, dtype=np.float32)
        for i, q in enumerate(states):
            row = self.lexical_row(q)
            if self.dense is not None:
                row = rrf([row, self.dense_row(q)], [1.0, self.cfg.dense_weight], self.cfg.rrf_k,
                          self.cfg.fusion_depth)
            out[i] = row
        return out

    def matched(self, query: str, indices: Sequence[int]) -> list[list[str]]:
        """For each premise index, the query words it matched (`word` when matched as
        written, `word→term` when through a cloud or the lexicon)."""
        ids, _, terms, sources = self.terms(query)
        if not len(ids):
            return [[] for _ in indices]
        sub = self.matrix[:, ids].tocsr()[np.asarray(indices, dtype=np.int64)]
        out = []
        for r in range(sub.shape[0]):
            cols = sub.indices[sub.indptr[r]:sub.indptr[r + 1]]
            out.append(sorted({sources[c] if sources[c] == terms[c] or _same(sources[c], terms[c])
                               else f"{sources[c]}→{terms[c]}" for c in cols}))
        return out


def rrf(rows: Sequence[np.ndarray], weights: Sequence[float], k: int = 60, depth: int = 100) -> np.ndarray:
    """Reciprocal-rank fusion of score rows: each row's `depth` best finite scores give
    weight / (k + rank), rank from 1; a premise in no row's head gets -inf."""
    from retriever.base import top_k
    out = np.zeros(rows[0].shape, dtype=np.float32)
    hit = np.zeros(rows[0].shape, dtype=bool)
    for row, w in zip(rows, weights):
        if not w:
            continue
        head = top_k(row, depth)
        out[head] += w / (k + np.arange(1, len(head) + 1, dtype=np.float32))
        hit[head] = True
    return np.where(hit, out, -np.inf).astype(np.float32)


def dense_member(r: InformalRetriever, cfg: InformalConfig) -> str:
    """Load the dense member into `r` (its encoder and the index of every premise's embedding,
    from the cache where it has them); the one line to say when it cannot, "" when it did."""
    from retriever.informal import dense
    why = dense.available()
    if why is None:
        root = dense.cache_root(cfg.dense_cache)
        try:
            encoder = dense.Encoder(cfg.dense, cfg.dense_tokens, cfg.dense_threads, root)
        except OSError as e:  # no such folder, and the hub cannot be reached
            why = (f"informal search: lexical only (the dense model {cfg.dense} cannot be loaded: "
                   f"{str(e).splitlines()[0][:120]})")
        else:
            texts = r.dense_texts()
            if not cfg.dense_build and not dense.index_ready(texts, encoder, root, cfg.dense_index,
                                                             cfg.dense_hnsw_m, cfg.dense_ef_construction):
                return dense.NO_INDEX
            r.dense = (encoder, dense.dense_index(texts, encoder, root, cfg.dense_index,
                                                  cfg.dense_hnsw_m, cfg.dense_ef_construction,
                                                  cfg.dense_ef_search, say=log.warning))
            return ""
    return why


def name_matrix(full_names: Sequence[str], vocab: dict[str, int], namespace_weight: float = 0.5):
    """(premises x vocabulary) CSC: each premise's name parts (stemmed, stop words kept out),
    weighted by their inverse frequency among names, a namespace part by `namespace_weight`,
    each row summing to one; a query's weighted terms times it is the share of the name they
    cover."""
    from scipy.sparse import csr_matrix  # here: scipy is slow to import

    from retriever.informal.text import name_parts, stem, stopwords
    stop = stopwords()
    rows: list[dict[int, float]] = []
    df: dict[int, int] = {}
    for name in full_names:
        space, _, own = name.rpartition(".")
        parts: dict[int, float] = {}
        for text, w in ((space, namespace_weight), (own, 1.0)):
            for part in name_parts(text) if text else ():
                t = vocab.get(stem(part)) if part not in stop else None
                if t is not None and w > parts.get(t, 0.0):
                    parts[t] = w
        rows.append(parts)
        for t in parts:
            df[t] = df.get(t, 0) + 1
    n = len(full_names)
    data, indices, indptr = [], [], [0]
    for parts in rows:
        ws = {t: w * np.log(1 + n / df[t]) for t, w in parts.items()}
        total = sum(ws.values()) or 1.0
        for t, w in sorted(ws.items()):
            indices.append(t)
            data.append(w / total)
        indptr.append(len(indices))
    return csr_matrix((np.asarray(data, dtype=np.float32), np.asarray(indices, dtype=np.int64),
                       np.asarray(indptr, dtype=np.int64)), shape=(n, max(len(vocab), 1))).tocsc()


def _same(word: str, term: str) -> bool:
    from retriever.informal.text import stem
    return stem(word) == term


def summary(r: InformalRetriever) -> str:
    return json.dumps({"premises": len(r.corpus), "docs": sum(bool(d) for d in r.docs),
                       "cloud_pairs": r.clouds.pairs, "cloud_words": len(r.clouds.learned)})
