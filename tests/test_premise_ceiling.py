"""The premise-ceiling benchmark's template mining (benchmarks/tried/premise_ceiling.py) on hand-made tactics."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from benchmarks.tried.premise_ceiling import generic, shapes


def test_shapes_count_one_premise_tactics_and_skip_held_out_states():
    nb = SimpleNamespace(
        tactics=["rw [Nat.succ_le_iff]", "exact bar h", "simp [a, b]", "rw [lt_irrefl]", "exact foo foo", "rw [Nat.zero_le]"],
        premises=[["Nat.succ_le_iff"], ["X.bar"], ["a", "b"], ["lt_irrefl"], ["foo"], ["Nat.zero_le"]],
        hidden=np.array([False, False, False, False, False, True]))
    got = shapes(nb)
    # Two premises, or one named twice, make no template; the held-out state does not count.
    assert got == {("rw [§]", 2): 1, ("exact § h", 1): 1, ("rw [§]", 1): 1}


def test_generic_fills_every_shape_with_every_premise_as_written():
    got = generic([("rw [§]", 1), ("exact § _", 2)], ["Nat.lt_succ_iff", "le_refl"])
    assert got == {"rw [lt_succ_iff]", "rw [le_refl]", "exact Nat.lt_succ_iff _", "exact le_refl _"}
