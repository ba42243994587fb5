"""The corpus (import closure, accessibility, lookup) and retrieval examples built from it."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import premise, tactic, theorem_record, write_json, write_jsonl
from prover.data.corpus import Corpus, module_name
from prover.data.dataset import Dataset
from prover.data.errors import SkipLog
from prover.data.pairs import gold_indices, premise_queries, same_module_count, state_premise_pairs
from prover.data.theorem import load_theorems


@pytest.fixture
def corpus(tiny_corpus_path) -> Corpus:
    return Corpus.load(tiny_corpus_path)


def names(corpus: Corpus, mask: np.ndarray) -> list[str]:
    return [f"{corpus.module_of(i)[0]}.{corpus.premises[i].full_name}" for i in np.flatnonzero(mask)]


def test_tiny_corpus_layout(corpus):
    assert corpus.files == ["A.lean", "B.lean", "C.lean", "D.lean"]
    assert len(corpus) == 9
    assert corpus.file_ranges == [(0, 3), (3, 5), (5, 8), (8, 9)]
    assert corpus.imports == [[], [0], [1], []]
    assert corpus.unknown_imports == 1  # B imports Lean/Core.lean, which is not in the corpus
    assert [p.full_name for p in corpus.premises_of("C.lean")] == ["c1", "c2", "c3"]
    assert corpus.module_of(4) == "B.lean"


def test_closure_is_transitive(corpus):
    assert corpus.closure_mask(2).tolist() == [True, True, False, False]   # C: B and, via B, A
    assert corpus.closure_mask(1).tolist() == [True, False, False, False]
    assert corpus.closure_mask(3).tolist() == [False, False, False, False]


def test_accessibility_in_c(corpus):
    # The theorem starts at (5, 8): c2 ends exactly there (usable), c3 comes later.
    mask = corpus.accessible_mask("C.lean", (5, 8))
    assert names(corpus, mask) == ["A.a1", "A.a2", "A.dup", "B.b1", "B.dup", "C.c1", "C.c2"]
    # One column earlier, c2 has not ended yet.
    assert names(corpus, corpus.accessible_mask("C.lean", (5, 7)))[-1] == "C.c1"
    # At the top of the file only imported premises are visible.
    assert names(corpus, corpus.accessible_mask("C.lean", (1, 1))) == [
        "A.a1", "A.a2", "A.dup", "B.b1", "B.dup"]


def test_accessibility_elsewhere(corpus):
    assert names(corpus, corpus.accessible_mask("B.lean", (100, 1))) == [
        "A.a1", "A.a2", "A.dup", "B.b1", "B.dup"]
    assert names(corpus, corpus.accessible_mask("D.lean", (100, 1))) == ["D.d1"]
    assert names(corpus, corpus.accessible_mask("A.lean", (3, 20))) == ["A.a1", "A.a2"]
    # The mask is a fresh array: changing it does not change the next answer.
    m = corpus.accessible_mask("D.lean", (100, 1))
    m[:] = True
    assert names(corpus, corpus.accessible_mask("D.lean", (100, 1))) == ["D.d1"]
    with pytest.raises(KeyError, match="Nope.lean"):
        corpus.accessible_mask("Nope.lean", (1, 1))


def test_imports_of_a_file_outside_the_corpus(corpus):
    """A file that imports B sees B's premises and, through B, A's; never C's or D's."""
    assert names(corpus, corpus.imports_mask(["B.lean"])) == ["A.a1", "A.a2", "A.dup", "B.b1", "B.dup"]
    assert names(corpus, corpus.imports_mask(["A.lean", "D.lean"])) == ["A.a1", "A.a2", "A.dup", "D.d1"]
    assert not corpus.imports_mask([]).any()
    with pytest.raises(KeyError, match="Nope.lean"):
        corpus.imports_mask(["A.lean", "Nope.lean"])


def test_files_are_found_by_path_module_or_a_path_ending_in_one(tmp_path):
    rows = [{"path": p, "imports": [], "premises": []} for p in (
        "Mathlib/Data/Nat/Basic.lean", ".lake/packages/aesop/Aesop/Nanos.lean", "Mathlib.lean")]
    c = Corpus.load(write_jsonl(tmp_path / "corpus.jsonl", rows))
    assert [module_name(p) for p in c.files] == ["Mathlib.Data.Nat.Basic", "Aesop.Nanos", "Mathlib"]
    for name, want in [("Mathlib/Data/Nat/Basic.lean", 0), ("Mathlib.Data.Nat.Basic", 0),
                       ("/home/me/mathlib4/Mathlib/Data/Nat/Basic.lean", 0),
                       ("C:\\src\\mathlib4\\Mathlib\\Data\\Nat\\Basic.lean", 0),
                       ("Aesop.Nanos", 1), (".lake/packages/aesop/Aesop/Nanos.lean", 1),
                       ("/w/proj/.lake/packages/aesop/Aesop/Nanos.lean", 1), ("Mathlib", 2)]:
        assert c.find_file(name) == want, name
    for name in ("Nat.Basic", "Mathlib.Data.Nat", "Mathlib/Data/Nat/Other.lean", "Init.Core", ""):
        assert c.find_file(name) is None, name


def test_import_cycle_terminates(tmp_path):
    rows = [
        {"path": "X.lean", "imports": ["Y.lean"], "premises": [premise("x", (1, 1), (1, 9))]},
        {"path": "Y.lean", "imports": ["X.lean", "W.lean"], "premises": [premise("y", (1, 1), (1, 9))]},
        {"path": "W.lean", "imports": [], "premises": [premise("w", (1, 1), (1, 9))]},
        {"path": "Z.lean", "imports": ["X.lean"], "premises": [premise("z", (1, 1), (1, 9))]},
        {"path": "S.lean", "imports": ["S.lean"], "premises": [premise("s", (1, 1), (1, 9))]},
    ]
    corpus = Corpus.load(write_jsonl(tmp_path / "corpus.jsonl", rows))
    assert corpus.closure_mask(3).tolist() == [True, True, True, False, False]  # Z: X, Y, W
    assert corpus.closure_mask(0).tolist() == [False, True, True, False, False]  # X: Y, W (not itself)
    assert corpus.closure_mask(1).tolist() == [True, False, True, False, False]
    assert corpus.closure_mask(4).tolist() == [False] * 5  # a self-import
    assert names(corpus, corpus.accessible_mask("Z.lean", (1, 1))) == ["X.x", "Y.y", "W.w"]


def test_deep_import_chain_does_not_recurse(tmp_path):
    n = 3000  # deeper than Python's default recursion limit
    rows = [{"path": f"F{i}.lean", "imports": [f"F{i - 1}.lean"] if i else [],
             "premises": [premise(f"p{i}", (1, 1), (1, 5))]} for i in range(n)]
    corpus = Corpus.load(write_jsonl(tmp_path / "corpus.jsonl", rows))
    assert int(corpus.closure_mask(n - 1).sum()) == n - 1
    assert int(corpus.accessible_mask(f"F{n // 2}.lean", (1, 1)).sum()) == n // 2


def test_locate_prefers_def_path(corpus):
    assert corpus.locate("dup", "B.lean") == 4
    assert corpus.locate("dup", "A.lean") == 2
    assert corpus.locate("dup") == 2  # first in corpus order without a hint
    assert corpus.locate("dup", "Elsewhere.lean") == 2
    assert corpus.locate("a1", "Wrong.lean") == 0  # a unique name is found whatever the hint
    assert corpus.locate("missing") is None


S0 = "x : ℕ\n⊢ x + 0 = x"
S1 = "x : ℕ\n⊢ x = x"
S2 = "x : ℕ\n⊢ True"


@pytest.fixture
def theorems(tmp_path):
    records = [
        theorem_record("T1", "C.lean", [
            tactic("rw [a1, b1]", [("a1", "A.lean"), ("b1", "B.lean"), ("a1", "A.lean")], S0, S1),
            tactic("skip", [], S1, S2),
            tactic("exact c1", [("c1", "C.lean"), ("Lean.core", "Init/Core.lean")], S1, "no goals"),
            tactic("trivial", [("Lean.trivial", "Init/Core.lean")], S2, "no goals"),
        ], start=(5, 8)),
        theorem_record("T2", "D.lean", [
            tactic("exact dup", [("dup", "B.lean")], S0, "no goals"),
        ], start=(3, 1)),
        theorem_record("T3", "Elsewhere.lean", [
            tactic("exact a1", [("a1", "A.lean")], S0, "no goals"),
        ]),
    ]
    return load_theorems(write_json(tmp_path / "random" / "test.json", records))


def test_gold_indices(corpus, theorems):
    skips = SkipLog()
    assert gold_indices(theorems[0].traced_tactics[0], corpus, skips) == [0, 3]  # repeats dropped
    assert gold_indices(theorems[0].traced_tactics[2], corpus, skips) == [5]
    assert gold_indices(theorems[1].traced_tactics[0], corpus, skips) == [4]  # dup of B.lean
    assert skips.counts == {"unknown premise": 1}
    assert skips.examples["unknown premise"] == ["Lean.core (from Init/Core.lean)"]


def test_premise_queries(corpus, theorems):
    skips = SkipLog()
    queries, no_gold = premise_queries(theorems, corpus, skips)
    assert [(q.theorem, q.tactic_index, q.gold) for q in queries] == [
        ("T1", 0, (0, 3)), ("T1", 2, (5,)), ("T2", 0, (4,))]
    assert no_gold == 2  # `skip` has no premise; `trivial` only an unknown one
    assert queries[0].state == S0 and queries[0].position == (5, 8)
    assert queries[0].file_path == "C.lean"
    assert skips.counts == {"unknown premise": 2, "theorem file not in corpus": 1}


def test_state_premise_pairs(corpus, theorems):
    skips = SkipLog()
    skips.add("unknown premise", "counted earlier by someone else")
    pairs, stats = state_premise_pairs(theorems[:2], corpus, skips)
    got = [(p.theorem, p.state, p.premises) for p in pairs]
    assert got == [
        ("T1", S0, [0, 3]),
        ("T1", S1, [0, 3, 5]),   # after tactic 0 and before tactic 2: merged, premise union
        ("T2", S0, [4]),         # same text as T1's S0, but another theorem: not merged
    ]
    # 'no goals' is never a pair; S2 only occurs around premise-less tactics.
    assert all(p.state != "no goals" for p in pairs)
    assert stats.as_dict() == {"tactics": 5, "tactics_without_premises": 2, "unknown_premises": 2,
                               "pairs_before_merge": 4, "pairs": 3}
    assert skips.counts["unknown premise"] == 3  # 1 earlier + 2 here; stats count only these


def test_same_module_count(corpus):
    acc = corpus.accessible_mask("C.lean", (5, 8))
    assert same_module_count(corpus, (0,), acc) == 2          # a2, dup of A
    assert same_module_count(corpus, (0, 3), acc) == 3        # a2, A.dup, B.dup
    assert same_module_count(corpus, (5,), acc) == 1          # c2 (c3 not accessible)


def test_mini_random_test_queries(mini_root):
    ds = Dataset(mini_root)
    corpus = ds.corpus()
    theorems = ds.theorems("random/test")
    queries, no_gold = premise_queries(theorems, corpus, ds.skips)
    known = {p.full_name for p in corpus.premises}
    with_located = sum(1 for t in theorems for tac in t.traced_tactics
                       if any(p.full_name in known for p in tac.premises))
    assert len(queries) == with_located == 111
    assert len(queries) + no_gold == sum(t.proof_length for t in theorems) == 200
    # Every gold premise of the mini data is accessible where its theorem starts.
    for q in queries:
        mask = corpus.accessible_mask(q.file_path, q.position)
        assert mask[list(q.gold)].all(), q.theorem
