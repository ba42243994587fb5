"""Premise-instantiated neighbour tactics (generator/tried/instantiate.py) on hand-made training states."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from generator.tried.instantiate import InstantiateConfig, fill, instantiated, template
from generator.neighbors import TacticNeighbors
from generator.settings import NeighborsConfig
from prover.data.theorem import parse_theorem
from tests.conftest import tactic, theorem_record


def test_a_template_names_one_premise_once():
    assert template("rw [Nat.succ_le_iff]", ["Nat.succ_le_iff"]) == (4, 19, 2, "Nat.succ_le_iff")
    slot = template("rw [succ_le_iff] at h", ["Nat.succ_le_iff"])
    assert slot == (4, 15, 1, "Nat.succ_le_iff")
    assert fill("rw [succ_le_iff] at h", slot, "Nat.lt_succ_iff") == "rw [lt_succ_iff] at h"
    assert fill("rw [Nat.succ_le_iff]", template("rw [Nat.succ_le_iff]", ["Nat.succ_le_iff"]),
                "Nat.lt_succ_iff") == "rw [Nat.lt_succ_iff]"
    assert template("simp", []) is None
    assert template("rw [a, b]", ["X.a", "X.b"]) is None  # two premises: not a template
    assert template("rw [foo, foo]", ["X.foo"]) is None  # named twice


def _neighbors():
    state = "n m : ℕ\nh : n < m\n⊢ n + 1 ≤ m"
    rec = theorem_record("t", "A.lean", [tactic("rw [Nat.succ_le_iff]", before=state,
                                                premises=[("Nat.succ_le_iff", "Mathlib/A.lean")]),
                                         tactic("omega", before=state)])
    thm = parse_theorem(rec, "mem", 0, None)
    return TacticNeighbors.build([thm], SimpleNamespace(file_index={"A.lean": 0}),
                                 NeighborsConfig(k=5, temperature=3.0)), state


def test_shown_premises_fill_the_templates_and_the_mixture_sums_to_one():
    nb, state = _neighbors()
    assert nb.premises == [["Nat.succ_le_iff"], []]
    near = nb.nearest_states(state)
    alone = instantiated(nb, near, [], InstantiateConfig())
    assert set(alone) == {"rw [Nat.succ_le_iff]", "omega"} and sum(alone.values()) == pytest.approx(1.0)
    mixed = instantiated(nb, near, ["Nat.lt_iff_add_one_le", "Nat.succ_le_iff"], InstantiateConfig(m=2, weight=0.5))
    assert "rw [Nat.lt_iff_add_one_le]" in mixed and sum(mixed.values()) == pytest.approx(1.0)
    # The template's own premise, shown again, adds to the tactic as written.
    assert mixed["rw [Nat.succ_le_iff]"] > alone["rw [Nat.succ_le_iff]"] * 0.5
