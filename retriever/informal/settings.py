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
    cloud_weight: float = 0.25  # chosen on docstrings/select (benchmarks/informal_search.py)
    lexicon_weight: float = 1.0
    cloud_size: int = 5  # learned cloud members per English word
    cloud_min_pairs: int = 3  # a pair seen in fewer docstring-declaration pairs is noise
    k1: float = 1.2
    b: float = 0.75
