"""The no-learning baselines (locality, usage, random) and their RRF fusions with BM25."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from retriever.settings import RetrievalBenchmarkConfig
from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.errors import UserInputError
from prover.data.pairs import gold_indices, premise_queries
from retriever.base import TheoremContext
from retriever.baselines.priors import LocalityRetriever, RandomRetriever, usage_counts
from retriever.baselines.hybrid import HybridRetriever, rrf_fuse
from retriever.registry import build_retriever, missing_training
from tests.conftest import TINY_CORPUS, tactic, theorem_record, write_json, write_jsonl

# Corpus indices of TINY_CORPUS: A: a1 0, a2 1, dup 2 | B: b1 3, dup 4 | C: c1 5, c2 6, c3 7 | D: d1 8
A1, A2, DUP_A, B1, DUP_B, C1, C2, C3, D1 = range(9)


def _ranked(retriever, ctx: TheoremContext, k: int = 100, state: str = "⊢ True") -> list[int]:
    return [h.index for h in retriever.retrieve([state], k, [ctx])[0]]


def _cfg(root: Path, split: str = "random/test", **retriever) -> object:
    cfg = OmegaConf.structured(RetrievalBenchmarkConfig)
    cfg.data.root, cfg.data.split = str(root), split
    for key, value in retriever.items():
        cfg.retriever[key] = value
    return cfg


def test_locality_ranks_own_file_nearest_first_then_by_import_distance(tiny_corpus_path):
    loc = LocalityRetriever(Corpus.load(tiny_corpus_path))
    # C.lean at (5, 8): c2 (ends there) then c1; B one hop away (later first); A two hops; c3
    # (after the theorem) and D (not imported) are not accessible.
    assert _ranked(loc, TheoremContext("C.lean", (5, 8))) == [C2, C1, DUP_B, B1, DUP_A, A2, A1]
    assert _ranked(loc, TheoremContext("B.lean", (2, 1))) == [B1, DUP_A, A2, A1]
    assert _ranked(loc, TheoremContext("D.lean", (1, 1))) == []
    assert _ranked(loc, TheoremContext("C.lean", (5, 8)), k=3) == [C2, C1, DUP_B]


def test_locality_breaks_equal_distances_by_import_order(tmp_path):
    # E imports F then G, each one hop away: F's premises come before G's.
    rows = [{"path": "G.lean", "imports": [], "premises": TINY_CORPUS[0]["premises"][:1]},
            {"path": "F.lean", "imports": [], "premises": TINY_CORPUS[1]["premises"][:1]},
            {"path": "E.lean", "imports": ["F.lean", "G.lean"], "premises": []}]
    loc = LocalityRetriever(Corpus.load(write_jsonl(tmp_path / "corpus.jsonl", rows)))
    assert _ranked(loc, TheoremContext("E.lean", (1, 1))) == [1, 0]


@pytest.fixture
def tiny_dataset(tmp_path, tiny_corpus_path) -> Path:
    """TINY_CORPUS with proofs in C.lean: `t1` (train) uses a1 twice and b1 once; `leak` is in
    random/train AND random/test and uses a2 five times; `t_test` (test only) uses dup of A."""
    root = tiny_corpus_path.parent
    t1 = theorem_record("t1", "C.lean", [tactic("exact a1", [("a1", "A.lean")]),
                                         tactic("rw [a1, b1]", [("a1", "A.lean"), ("b1", "B.lean")])])
    leak = theorem_record("leak", "C.lean", [tactic("exact a2", [("a2", "A.lean")])] * 5)
    t_test = theorem_record("t_test", "C.lean", [tactic("exact dup", [("dup", "A.lean")])])
    write_json(root / "random" / "train.json", [t1, leak])
    write_json(root / "random" / "test.json", [leak, t_test])
    return root


def test_usage_counts_training_proofs_of_the_file_then_locality(tiny_dataset):
    usage = build_retriever("usage", Corpus.load(tiny_dataset / "corpus.jsonl"),
                            _cfg(tiny_dataset, "random/test", usage_split="random/train"))
    # a1 used twice, b1 once; `leak` is in the evaluated split, so its a2 uses do not count,
    # nor does t_test's dup of A: both fall back to locality order.
    assert usage.counts["C.lean"][0].tolist() == [A1, B1]
    assert usage.counts["C.lean"][1].tolist() == [2, 1]
    ctx = TheoremContext("C.lean", (10, 1))
    assert _ranked(usage, ctx) == [A1, B1, C2, C1, DUP_B, DUP_A, A2]
    # A query in another file gets no credit from C.lean's proofs: plain locality.
    assert _ranked(usage, TheoremContext("B.lean", (2, 1))) == [B1, DUP_A, A2, A1]


def test_usage_without_the_held_out_split_would_count_the_leak(tiny_dataset):
    # Evaluating a split that does not exist leaves nothing to hold out: `leak` counts (5 uses
    # of a2), which is exactly what the held-out filter above prevents.
    usage = build_retriever("usage", Corpus.load(tiny_dataset / "corpus.jsonl"),
                            _cfg(tiny_dataset, "random/val", usage_split="random/train"))
    assert _ranked(usage, TheoremContext("C.lean", (10, 1)))[:2] == [A2, A1]


def test_usage_refuses_to_count_the_evaluated_split(tiny_dataset):
    corpus = Corpus.load(tiny_dataset / "corpus.jsonl")
    with pytest.raises(UserInputError, match="evaluated split"):
        build_retriever("usage", corpus, _cfg(tiny_dataset, "random/test", usage_split="random/test"))
    with pytest.raises(UserInputError, match="no split random/nope"):
        build_retriever("usage", corpus, _cfg(tiny_dataset, "random/test", usage_split="random/nope"))
    with pytest.raises(UserInputError, match="data.root"):
        build_retriever("usage", corpus, OmegaConf.create({"retriever": {}}))


def test_usage_split_defaults_to_the_evaluated_strategy_s_train_split(tiny_dataset):
    from retriever.registry import usage_split
    assert usage_split(_cfg(tiny_dataset, "random/test")) == "random/train"
    assert usage_split(_cfg(tiny_dataset, "leandojo-real/val")) == "random/train"  # no own train
    assert usage_split(_cfg(tiny_dataset, "novel_premises/test", usage_split="x/train")) == "x/train"


def test_random_is_seeded_per_query_and_ranks_only_accessible(tiny_corpus_path):
    corpus = Corpus.load(tiny_corpus_path)
    ctx = TheoremContext("C.lean", (5, 8))
    a, b, c = RandomRetriever(corpus, 0), RandomRetriever(corpus, 0), RandomRetriever(corpus, 1)
    assert _ranked(a, ctx) == _ranked(b, ctx)
    assert sorted(_ranked(a, ctx)) == [A1, A2, DUP_A, B1, DUP_B, C1, C2]
    # Seeds (and queries) give other orders; over many seeds, many distinct orders.
    orders = {tuple(_ranked(RandomRetriever(corpus, s), ctx)) for s in range(20)}
    assert len(orders) > 10
    assert _ranked(a, ctx) != _ranked(c, ctx) or _ranked(a, ctx, state="x") != _ranked(c, ctx, state="x")


def test_rrf_fusion_of_baselines_by_hand(tiny_corpus_path):
    # Ranks [1, 2, 3] and [3, 1]: 1 gets 1/61 + 1/62, 3 gets 1/63 + 1/61, 2 only 1/62.
    fused = rrf_fuse([[1, 2, 3], [3, 1]], [1.0, 1.0], k_rrf=60)
    assert [i for i, _ in fused] == [1, 3, 2]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62) and fused[2][1] == pytest.approx(1 / 62)
    corpus = Corpus.load(tiny_corpus_path)
    loc, rnd = LocalityRetriever(corpus), RandomRetriever(corpus, 3)
    ctx = TheoremContext("C.lean", (5, 8))
    both = HybridRetriever([loc, rnd], name="locality+random")
    expected = [i for i, _ in rrf_fuse([_ranked(loc, ctx), _ranked(rnd, ctx)], [1, 1], 60)]
    assert _ranked(both, ctx) == expected
    assert sorted(expected) == [A1, A2, DUP_A, B1, DUP_B, C1, C2]


def test_fusions_are_registered_untrained_rows(tiny_dataset):
    from retriever.evaluation.benchmark import TRAINED_BY
    corpus = Corpus.load(tiny_dataset / "corpus.jsonl")
    cfg = _cfg(tiny_dataset, "random/test")
    for name, members in (("bm25+locality", ["bm25", "locality"]), ("bm25+usage", ["bm25", "usage"]),
                          ("bm25+usage+locality", ["bm25", "usage", "locality"])):
        r = build_retriever(name, corpus, cfg)
        assert r.name == name and [m.name for m in r.retrievers] == members and r.k_rrf == 60
        assert name not in TRAINED_BY and missing_training(name, cfg) is None
        assert set(_ranked(r, TheoremContext("C.lean", (5, 8)))) == {A1, A2, DUP_A, B1, DUP_B, C1, C2}


# --- mathlib-src-mini -------------------------------------------------------------------


@pytest.fixture(scope="module")
def mini(mini_root):
    ds = Dataset(mini_root)
    corpus = ds.corpus()
    queries, _ = premise_queries(ds.theorems("random/test"), corpus)
    return ds, corpus, queries


def test_locality_on_mini_ranks_accessible_premises_own_file_nearest_first(mini):
    ds, corpus, queries = mini
    loc = LocalityRetriever(corpus)
    checked_own = 0
    for q in queries[::25]:
        ctx = TheoremContext(q.file_path, q.position)
        ranked = np.array(_ranked(loc, ctx, k=len(corpus)))
        mask = corpus.accessible_mask(q.file_path, q.position)
        assert sorted(ranked.tolist()) == np.flatnonzero(mask).tolist()  # all accessible, only those
        f = corpus.file_index[q.file_path]
        own = ranked[corpus.premise_file[ranked] == f]
        # Own file first, nearest (latest-ending) first.
        assert ranked[: len(own)].tolist() == own.tolist()
        ends = corpus._end_key[own]
        assert np.all(ends[:-1] >= ends[1:])
        checked_own += len(own) > 1
        # Then import distance never decreases along the ranking.
        dist = _import_distance(corpus, f)[corpus.premise_file[ranked]]
        assert np.all(np.diff(dist) >= 0)
    assert checked_own >= 3


def _import_distance(corpus: Corpus, f: int) -> np.ndarray:
    dist = np.full(len(corpus.files), 10**9)
    dist[f], frontier = 0, [f]
    while frontier:
        nxt = []
        for g in frontier:
            for h in corpus.imports[g]:
                if dist[h] > dist[g] + 1:
                    dist[h] = dist[g] + 1
                    nxt.append(h)
        frontier = nxt
    return dist


def test_usage_on_mini_counts_only_training_proofs(mini, mini_root):
    ds, corpus, queries = mini
    usage = build_retriever("usage", corpus, _cfg(mini_root, "random/test"))
    train = ds.theorems("random/train")
    test = ds.theorems("random/test")
    assert not {(t.file_path, t.full_name) for t in train} & {(t.file_path, t.full_name) for t in test}
    expected = usage_counts(train, corpus)
    got = {p: dict(zip(i.tolist(), n.tolist())) for p, (i, n) in usage.counts.items()}
    assert got == {p: {i: float(n) for i, n in c.items()} for p, c in expected.items()}
    # A premise used by a test proof of its file, but by no training proof there, gets no
    # credit: its score is locality's tie-breaker alone (below 1).
    test_only = [(q, i) for q in queries for i in q.gold
                 if i not in expected.get(q.file_path, {})]
    assert test_only
    for q, i in test_only[:50]:
        ctx = TheoremContext(q.file_path, q.position)
        assert usage.context_scores(q.state, ctx)[i] < 1
    # And its ranking is accessible-only, used premises first by count.
    q = next(q for q in queries if expected.get(q.file_path))
    ctx = TheoremContext(q.file_path, q.position)
    ranked = _ranked(usage, ctx, k=len(corpus))
    mask = corpus.accessible_mask(q.file_path, q.position)
    assert sorted(ranked) == np.flatnonzero(mask).tolist()
    counts = [expected[q.file_path].get(i, 0) for i in ranked]
    assert counts == sorted(counts, reverse=True) and counts[0] > 0


def test_training_gold_indices_match_counted_uses(mini):
    # usage_counts counts one use per tactic that names the premise (as gold_indices dedupes).
    ds, corpus, _ = mini
    thm = next(t for t in ds.theorems("random/train") if t.traced_tactics)
    counts = usage_counts([thm], corpus)[thm.file_path]
    assert sum(counts.values()) == sum(len(gold_indices(t, corpus)) for t in thm.traced_tactics)


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_posting_scorer_counts_repeated_tokens_once_each_and_matches_bm25s(method):
    import bm25s
    from retriever.baselines.bm25 import PostingScorer
    docs = [["a", "b"], ["b", "c", "c"], ["d"], ["a", "a", "c"]]
    model = bm25s.BM25(method=method)
    model.index(docs, show_progress=False)
    scorer = PostingScorer(model)
    for query in (["a"], ["a", "a", "c"], ["c", "b", "c", "c", "a"]):
        got = scorer(query)
        assert got.dtype == np.float32 and got.shape == (4,)
        assert np.allclose(got, model.get_scores(query), rtol=1e-5)
