"""Informal search (issue 51): English, LaTeX, theorem names and Lean-like terms find premises.

The end-to-end tests index a corpus built with `prover data corpus` (docstrings kept) from a
slice of the 300 real Mathlib source files (`mathlib-src/leandojo-real/source`): every tenth
file and `Mathlib/Data/Real/Irrational.lean`, so that the index takes seconds.
"""
from __future__ import annotations

import shutil

import pytest

from prover.data.corpus import Corpus
from prover.data.project_corpus import build_corpus
from retriever.informal.clouds import Clouds
from retriever.informal.retriever import InformalRetriever
from retriever.informal.settings import InformalConfig
from retriever.informal.text import name_parts, raw_words, words
from retriever.registry import build_retriever
from retriever.settings import RetrieverConfig
from tests.conftest import require


def test_names_split_by_mathlib_conventions():
    assert name_parts("mul_le_mul_left") == ["mul", "le", "mul", "left"]
    assert name_parts("Nat.Prime.two_le") == ["nat", "prime", "two", "le"]
    assert name_parts("exists_ratio_deriv_eq_ratio_slope") == ["exists", "ratio", "deriv", "eq", "ratio", "slope"]
    assert name_parts("hasDerivAt_id'") == ["has", "deriv", "at", "id"]
    assert name_parts("_private.Mathlib.Foo.0.bar_baz") == ["bar", "baz"]


def test_notation_and_latex_read_as_the_same_words():
    assert raw_words("Irrational (√2)") == ["irrational", "sqrt", "two"]
    assert words(r"\sqrt{2}") == words("√2") == ["sqrt", "two"]
    assert raw_words("∑ i in range n, ‖f i‖⁻¹") == ["sum", "i", "in", "range", "n", "norm", "f", "i", "norm", "inv"]
    assert raw_words(r"a \mid b") == raw_words("a ∣ b") == ["a", "dvd", "b"]
    assert raw_words(r"\int_0^1 x \, dx")[:1] == ["integral"]
    assert raw_words(r"(ab)^{-1}") == ["ab", "inv"]
    assert raw_words(r"\|x\| \le 1") == ["norm", "x", "norm", "le", "one"]
    assert raw_words(r"x \in \mathbb{Q}") == ["x", "mem", "rat"]
    assert "bezout" in raw_words("Bézout's identity")


def test_clouds_learn_from_docstring_declaration_pairs():
    pairs = [(["squar", "root"], ["sqrt", "two"]), (["squar", "root", "posit"], ["sqrt", "pos"]),
             (["squar", "root"], ["sqrt", "le"]), (["deriv"], ["deriv", "le"]), (["sum"], ["add"])]
    c = Clouds.learn(pairs, size=3, min_pairs=3)
    assert c.pairs == 5
    assert [t for t, _ in c.learned["squar"]] == ["sqrt"]
    assert "deriv" not in c.learned  # seen with its formal words once: below min_pairs
    terms = c.expand("the square root")
    assert terms["sqrt"][1] == "square root"  # the curated phrase outranks the learned word
    assert terms["squar"] == (1.0, "square")


@pytest.fixture(scope="module")
def real_corpus(data_root, tmp_path_factory):
    source = require(data_root / "mathlib-src" / "leandojo-real" / "source")
    files = sorted(source.rglob("*.lean"))
    picked = set(files[9::10]) | {source / "Mathlib" / "Data" / "Real" / "Irrational.lean"}
    root = tmp_path_factory.mktemp("informal-source")
    for f in picked:
        (root / f.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, root / f.relative_to(source))
    out = tmp_path_factory.mktemp("informal-real")
    build_corpus(root, out, progress=False, say=lambda _: None)
    return Corpus.load(out / "corpus.jsonl")


@pytest.fixture(scope="module")
def informal(real_corpus):
    return InformalRetriever(real_corpus)


def _top(r, query, k=5):
    return [x.premise.full_name for x in r.retrieve([query], k, [None])[0]]


@pytest.mark.parametrize("query", ["the square root of two is irrational",
                                   r"$\sqrt{2}$ is irrational", "Irrational (Real.sqrt 2)"])
def test_square_root_of_two_is_irrational(informal, query):
    assert "irrational_sqrt_two" in _top(informal, query, 3)


def test_hits_say_which_words_matched(informal):
    query = "the square root of two is irrational"
    hits = informal.retrieve([query], 3, [None])[0]
    best = next(h for h in hits if h.premise.full_name == "irrational_sqrt_two")
    matched = informal.matched(query, [best.index])[0]
    assert "square root→sqrt" in matched and "irrational" in matched and "two" in matched
    assert informal.docs[best.index] == "**Irrationality of the Square Root of 2**"


def test_hidden_docstrings_are_neither_indexed_nor_learned(real_corpus, informal):
    query = "Irrationality of the Square Root of 2"
    hidden = InformalRetriever(real_corpus, hidden={"irrational_sqrt_two"})
    i = next(i for i, p in enumerate(real_corpus.premises) if p.full_name == "irrational_sqrt_two")
    assert hidden.docs[i] == "" and informal.docs[i]
    assert hidden.clouds.pairs == informal.clouds.pairs - 1
    assert "irrational_sqrt_two" in _top(hidden, query, 10)


def test_registered_with_its_settings(real_corpus):
    r = build_retriever("informal", real_corpus, RetrieverConfig(name="informal", informal=InformalConfig(cloud_size=2)))
    assert isinstance(r, InformalRetriever) and r.cfg.cloud_size == 2
    assert all(len(ts) <= 2 for ts in r.clouds.learned.values())


def test_docstrings_come_from_the_sources_beside_a_corpus(tmp_path):
    """A dataset folder with `leandojo-real/source` (as mathlib-src) lends its docstrings: the
    sources are built into the cache once (`prover data corpus`) and joined by name."""
    from prover.data.errors import UserInputError
    from retriever.informal.retriever import read_docs, resolve_docs
    folder = tmp_path / "data"
    src = folder / "leandojo-real" / "source" / "Demo"
    src.mkdir(parents=True)
    (src / "Basic.lean").write_text("/-- **Two** is even. -/\ntheorem two_even : Even 2 := ⟨1, rfl⟩\n",
                                    encoding="utf-8")
    built = resolve_docs(folder, None, tmp_path / "cache")
    assert built is not None and str(tmp_path / "cache") in built
    assert read_docs(built).doc == {"two_even": "**Two** is even."}
    assert resolve_docs(folder, None, tmp_path / "cache") == built  # once per source state
    assert resolve_docs(tmp_path / "elsewhere", None) is None
    with pytest.raises(UserInputError, match="does not exist"):
        resolve_docs(folder, str(tmp_path / "missing"))


def test_a_premise_that_matches_nothing_is_no_hit(informal):
    hits = informal.retrieve(["irrational zzzunknownword"], 50, [None])[0]
    assert hits and all(h.score > 0 for h in hits)
    assert all("irrational" in m for m in informal.matched("irrational", [h.index for h in hits]))
    assert informal.retrieve(["zzzunknownword"], 5, [None]) == [[]]


def test_queries_read_written_mathematics_as_mathlib_names_it():
    from retriever.informal.text import query_text, query_word
    assert raw_words("Cauchy-Schwarz inequality") == ["cauchy", "schwarz", "inequality"]  # a joined name
    assert "sub" in raw_words("a-b") and "sub" in raw_words("x - y")  # a minus stays one
    assert raw_words(query_text(r"\frac{d}{dx} \sin x"))[:2] == ["deriv", "sin"]
    assert "deriv" in raw_words(query_text("(fg)' = f'(x)"))
    assert raw_words(query_text("e^{x+y}"))[0] == "exp"
    assert [query_word(w) for w in raw_words("(ab)^{-1} ≤ pi")] == ["mul", "inv", "le", "pi"]


def test_the_query_conventions_can_be_switched_off():
    """The audit's question (issue 62): the query read without the conventions added after
    batch 1's report was seen, as before them."""
    c = Clouds.learn([], size=3, min_pairs=3)
    on = c.expand("(fg)' of e^x, Cauchy-Schwarz", 0.0, 1.0, 0.5)
    off = c.expand("(fg)' of e^x, Cauchy-Schwarz", 0.0, 1.0, 0.5, conventions=False)
    assert {"deriv", "exp", "mul"} <= set(on) and not {"deriv", "exp", "mul"} & set(off)
    assert "fg" in off and "sub" in off and "sub" not in on  # the hyphen a minus again
    assert raw_words("Cauchy-Schwarz", hyphen=False) == ["cauchy", "sub", "schwarz"]


def test_a_word_the_lexicon_names_counts_less_as_itself():
    c = Clouds.learn([], size=3, min_pairs=3)
    terms = c.expand("addition is commutative", cloud_weight=0.0, lexicon_weight=1.0, named_weight=0.5)
    assert terms["add"] == (1.0, "addition") and terms["comm"] == (1.0, "commutative")
    assert terms["addit"][0] == 0.5 and terms["commut"][0] == 0.5
    assert c.expand("addition", 0.0, 0.0, 0.5)["addit"][0] == 1.0  # no lexicon, no discount


def test_name_match_is_the_share_of_a_name_its_terms_cover():
    import numpy as np

    from retriever.informal.retriever import name_matrix
    vocab = {t: i for i, t in enumerate(["add", "comm", "group", "nat", "prime", "two", "le"])}
    m = name_matrix(["add_comm", "AddCommGroup", "Nat.Prime.two_le", "two_le"], vocab, namespace_weight=0.5)
    q = np.zeros(len(vocab), dtype=np.float32)
    q[[vocab["add"], vocab["comm"]]] = 1.0
    cover = m @ q
    assert cover[0] == pytest.approx(1.0) and 0 < cover[1] < 1 and cover[2] == cover[3] == 0
    q[:] = 0
    q[[vocab["two"], vocab["le"]]] = 1.0
    cover = m @ q
    assert cover[3] == pytest.approx(1.0) and 0.5 < cover[2] < 1  # its namespace counts half
