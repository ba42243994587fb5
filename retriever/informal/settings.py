"""The informal retriever's settings (`retriever.informal` in a RetrieverConfig)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class InformalConfig:
    # A corpus.jsonl (or its folder), or a folder of Lean sources (built once into
    # retriever.corpus_cache), whose `doc` fields are added by full name to premises that have
    # none: a corpus from LeanDojo's records carries no docstrings, the sources do. null: the
    # corpus folder's leandojo-real/source when there is one, else the corpus' own `doc` fields.
    docs: str | None = None
    name_weight: int = 2  # a name part counts this many times in a declaration's text
    doc_weight: int = 1  # a docstring word, this many times
    # Query expansion: each query word adds the name parts and notation words of its cloud,
    # each weighted by cloud_weight times its normalised PMI (learned) or lexicon_weight (curated).
    # The defaults (cloud 0, lexicon 1, name match 0.5, named weight 0.5) are what queries/select
    # chose (informal-queries-batch2-mathlib-src-report.md); docstrings/select chose cloud 0.25,
    # name match 0.25 (0.3 points of nDCG@10 below it on queries/select).
    cloud_weight: float = 0.0
    lexicon_weight: float = 1.0
    # A query word the lexicon names counts this much as itself ("addition" is mostly `add`).
    named_weight: float = 0.5
    cloud_size: int = 5  # learned cloud members per English word
    cloud_min_pairs: int = 3  # a pair seen in fewer docstring-declaration pairs is noise
    # Name match: a premise whose own name's parts the query's terms cover (each part weighted
    # by its rarity among names) gains name_match times that covered share times the query's
    # best BM25 score; a namespace part (`Nat.` in `Nat.Prime.two_le`) counts namespace_weight
    # of a part of the last component. Mathlib's names state their theorems, so a query that
    # says every part of `add_comm` wants it before a structure whose docstring shares a word.
    name_match: float = 0.5
    namespace_weight: float = 0.5
    k1: float = 1.2
    b: float = 0.75
