"""The retriever comparison table (issue 59) on synthetic records whose answers are known."""
from __future__ import annotations

import json
import math

import pytest

from prover.search.comparison import compare, mcnemar_exact, paired, wilson
from prover.search.results import markdown, summarize_dir


def records(proved: list[bool], retriever: str, env: str = "repl") -> list[dict]:
    return [{"key": f"T{i}", "theorem": f"t{i}", "status": "proved" if p else "failed", "env": env,
             "retriever": retriever, "expansions": 1, "env_started": True, "proof": ["rfl"] if p else None,
             "check": {"checks": ["errors", "axioms", "replay"] if i % 2 else ["errors", "axioms"]} if p else None}
            for i, p in enumerate(proved)]


def test_wilson_by_hand():
    lo, hi = wilson(5, 10)
    # p = 1/2, z^2 = 3.8415: centre 1/2, half-width z sqrt(1/40 + z^2/400) / (1 + z^2/10)
    z = 1.959963984540054
    half = z * math.sqrt(0.025 + z * z / 400) / (1 + z * z / 10)
    assert lo == pytest.approx(0.5 - half) and hi == pytest.approx(0.5 + half)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == pytest.approx(1.0)
    assert wilson(0, 0) is None


def test_all_equal_one_discordant_all_discordant():
    same = {f"T{i}": i < 3 for i in range(10)}
    assert paired(same, dict(same)) == {"theorems": 10, "only_this": 0, "only_other": 0,
                                        "difference_points": 0.0, "mcnemar_p": 1.0}
    one = dict(same, T9=True)
    assert paired(one, same) == {"theorems": 10, "only_this": 1, "only_other": 0,
                                 "difference_points": 10.0, "mcnemar_p": 1.0}  # 2 * 1/2
    flipped = {k: not v for k, v in same.items()}
    assert paired(flipped, same) == {"theorems": 10, "only_this": 7, "only_other": 3,
                                     "difference_points": 40.0, "mcnemar_p": round(2 * 176 / 1024, 4)}
    # All ten discordant one way: p = 2 / 2^10.
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)


def test_pairs_only_over_theorems_both_attempted():
    a = {"T0": True, "T1": False, "T2": True}
    b = {"T1": True, "T2": True, "T3": True}
    assert paired(a, b) == {"theorems": 2, "only_this": 0, "only_other": 1,
                            "difference_points": -50.0, "mcnemar_p": 1.0}


def test_compare_rows_and_checks():
    runs = {"repl-none": records([True, False, False, False], "none"),
            "repl-bm25": records([True, True, True, False], "bm25"),
            "repl-reprover": records([True, True, False, False], "reprover")}
    rows = compare(runs, {n: rs[0]["retriever"] for n, rs in runs.items()})
    bm25 = rows["repl-bm25"]
    assert (bm25["proved"], bm25["attempted"], bm25["pass@1"]) == (3, 4, 0.75)
    assert bm25["vs_none"]["only_this"] == 2 and bm25["vs_none"]["only_other"] == 0
    assert bm25["vs_reprover"]["only_this"] == 1 and bm25["vs_reprover"]["difference_points"] == 25.0
    assert bm25["checks"] == ["axioms", "errors"]  # T0's proof ran no replay
    assert "vs_none" not in rows["repl-none"] and "vs_reprover" in rows["repl-none"]
    assert rows["repl-none"]["checks"] == ["axioms", "errors"]


def test_the_summary_has_the_table_and_the_literature(tmp_path):
    for name, proved in (("repl-none", [True, False, False]), ("repl-bm25", [True, True, False])):
        (tmp_path / name).mkdir()
        rows = records(proved, name.split("-")[1])
        (tmp_path / name / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = summarize_dir(tmp_path)
    row = summary["comparison"]["repl"]["repl-bm25"]
    assert row["vs_none"] == {"theorems": 3, "only_this": 1, "only_other": 0, "difference_points": 33.33,
                              "mcnemar_p": 1.0}
    text = markdown(summary)
    assert "| repl-bm25 | 2 / 3 | 66.7 [" in text and "+33.3 pts (1 vs 0" in text
    assert "literature" in text and "51.2" in text


def test_accessible_only_gives_no_premises_where_the_place_is_unknown(tiny_corpus_path):
    """ReProver's premises are the accessible ones: with `accessible_only` a state whose file is
    not in the corpus gets none, instead of the whole corpus's best."""
    from prover.data.corpus import Corpus
    from prover.search.sources import RetrieverPremises
    from retriever.base import TheoremContext
    from retriever.baselines.bm25 import BM25Retriever
    corpus = Corpus.load(tiny_corpus_path)
    retriever = BM25Retriever(corpus)
    unknown = TheoremContext("Elsewhere.lean", (1, 1))
    known = TheoremContext("C.lean", (5, 8))
    everywhere = RetrieverPremises(retriever, 3).retrieve(["⊢ a1"], [unknown])
    strict = RetrieverPremises(retriever, 3, accessible_only=True)
    assert everywhere[0] and strict.retrieve(["⊢ a1", "⊢ a1"], [unknown, known]) == [
        [], RetrieverPremises(retriever, 3).retrieve(["⊢ a1"], [known])[0]]
    assert strict.contexts_dropped == 1
