"""`@[to_additive]` twins read as their own statements (prover.data.additive_twins)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from prover.data.additive_twins import Translations, is_twin, render, render_twins
from prover.data.dataset import Dataset
from prover.data.premise import Premise
from prover.data.to_additive import DICTIONARY


def _p(name: str, code: str = "", goal: str = "", kind: str = "theorem", derived_from: str = "",
       args: tuple[str, ...] = ()) -> Premise:
    return Premise(name, "A.lean", (1, 1), (1, 2), kind, code, args, goal, derived_from=derived_from)


CORPUS = [
    _p("mul_comm", "@[to_additive]\ntheorem mul_comm : ∀ a b : G, a * b = b * a", "∀ a b : G, a * b = b * a"),
    _p("add_comm", "@[to_additive]\ntheorem add_comm : ∀ a b : G, a * b = b * a", "∀ a b : G, a * b = b * a",
       kind="to_additive", derived_from="mul_comm", args=("[CommMonoid G]",)),
    _p("Monoid", kind="class"), _p("AddMonoid", kind="class"), _p("CommMonoid", kind="class"),
    _p("AddCommMonoid", kind="class"), _p("Monoid.npow", kind="field"), _p("AddMonoid.nsmul", kind="field"),
    _p("Finset.sum", kind="to_additive", derived_from="Finset.prod"),
    _p("Prod", kind="structure"),
]


@pytest.mark.parametrize("text, additive", [
    ("∀ a b : G, a * b = b * a", "∀ a b : G, a + b = b + a"),
    ("a ^ (m * n) = (a ^ m) ^ n", "(m * n) • a = n • (m • a)"),  # an exponent is a fixed type: kept
    ("a⁻¹ < b ↔ 1 < b * a", "-a < b ↔ 0 < b + a"),
    ("f x⁻¹ = (a / b)⁻¹", "f (-x) = -(a - b)"),
    ("a * ↑u⁻¹ = 1", "a + ↑(-u) = 0"),
    ("Monoid.npow n x = x ^ n", "AddMonoid.nsmul n x = n • x"),
    ("∏ i ∈ s, f i ^ (n + 1) = 1", "∑ i ∈ s, (n + 1) • f i = 0"),
    ("(fun x : G => x ^ n)^[j] = f ⁻¹' s", "(fun x : G => n • x)^[j] = f ⁻¹' s"),  # iterate, preimage
    ("[CommMonoid Mˣ] : x ∈ Mᵐᵒᵖ", "[AddCommMonoid (AddUnits M)] : x ∈ Mᵃᵒᵖ"),
    ("mul_comm a b = c • d", "add_comm a b = c +ᵥ d"),
    ("Prod.fst p = p.1", "Prod.fst p = p.1"),  # no twin, no structure word: left alone
])
def test_render_follows_to_additive(text: str, additive: str) -> None:
    assert render(text, Translations(CORPUS)) == additive


def test_attributes_comments_and_strings_are_copied() -> None:
    code = '@[to_additive "the sum `a * b`"]\n/-- a * b -/ theorem add_x : a * 1 = a'
    assert render(code, Translations(CORPUS)) == '@[to_additive "the sum `a * b`"]\n/-- a * b -/ theorem add_x : a + 0 = a'


def test_twins_detected_from_kind_or_from_a_leandojo_code() -> None:
    assert is_twin(CORPUS[1]) and not is_twin(CORPUS[0])
    # LeanDojo's corpora carry only code: the attribute, and a declared name that is not the premise's.
    assert is_twin(_p("add_comm", "@[to_additive]\ntheorem mul_comm : a * b = b * a", "a * b = b * a"))
    assert not is_twin(_p("mul_comm", "@[to_additive]\ntheorem mul_comm : a * b = b * a", "a * b = b * a"))


def test_render_twins_changes_twins_only() -> None:
    out, n = render_twins(CORPUS)
    assert n == 2
    assert out[1].goal == "∀ a b : G, a + b = b + a" and out[1].args == ("[AddCommMonoid G]",)
    assert "a + b = b + a" in out[1].code and out[0] == CORPUS[0]


def test_dictionary_names_its_sources() -> None:
    assert DICTIONARY["name_dict"]["mul"] == ["add"] and DICTIONARY["name_dict"]["one"] == ["zero"]
    assert set(DICTIONARY["sources"]) >= {"name_dict", "abbreviations", "notation"}
    assert all(n["source"].startswith("Mathlib/") for n in DICTIONARY["notation"])


def test_the_dataset_renders_behind_one_setting(tmp_path: Path) -> None:
    lines = [{"path": "A.lean", "imports": [], "premises": [
        {"full_name": "mul_one", "code": "@[to_additive]\ntheorem mul_one : a * 1 = a", "start": [1, 1],
         "end": [2, 1], "kind": "theorem", "args": [], "goal": "a * 1 = a"},
        {"full_name": "add_zero", "code": "@[to_additive]\ntheorem add_zero : a * 1 = a", "start": [1, 1],
         "end": [2, 1], "kind": "to_additive", "args": [], "goal": "a * 1 = a", "derived_from": "mul_one"}]}]
    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(json.dumps(x) for x in lines) + "\n")
    on = Dataset(tmp_path, render_to_additive=True).corpus()
    off = Dataset(tmp_path).corpus()  # off by default (the rule for close calls, on select)
    assert [p.goal for p in on.premises] == ["a * 1 = a", "a + 0 = a"]
    assert [p.goal for p in off.premises] == ["a * 1 = a", "a * 1 = a"]


def test_the_service_reads_premises_as_its_runs_config_says(tmp_path: Path) -> None:
    from prover.serve.loading import render_setting
    from retriever.settings import RetrieverConfig
    assert render_setting(RetrieverConfig()) is False  # no training config: the default
    on = tmp_path / "on.yaml"
    on.write_text("data:\n  render_to_additive: true\n", encoding="utf-8")
    assert render_setting(RetrieverConfig(models=str(on))) is True
