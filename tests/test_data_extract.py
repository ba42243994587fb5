"""`prover data extract`: a statement-level dataset (mathlib-src's layout) of a Lake project."""
from __future__ import annotations

import json

from prover.cli import main
from prover.tracing.extract import render_state

LIB = """namespace Lib

theorem le_refl' (n : Nat) : n ≤ n := Nat.le_refl n

theorem le_trans' {a b c : Nat} (h₁ : a ≤ b) (h₂ : b ≤ c) : a ≤ c := Nat.le_trans h₁ h₂

end Lib
"""

MAIN = """import Lib.Basic

open Lib

variable {G : Type} [Mul G] [One G]

/-- Uses both. -/
theorem chain (x y : Nat) (h : x ≤ y) : x ≤ y := by
  -- a comment, left out
  exact le_trans' (le_refl' x) h

theorem uses_local (le_refl' : Nat) : le_refl' = le_refl' := by
  cases le_refl' <;> rfl

private theorem hidden : True := trivial

theorem again (x : Nat) : x ≤ x := le_refl' x

theorem with_insts (g : G) : g * 1 = g * 1 := rfl
"""


def make_project(root):
    (root / "Demo").mkdir(parents=True)
    (root / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage demo\nrequire lib\n")
    (root / "Demo" / "Main.lean").write_text(MAIN)
    lib = root / ".lake" / "packages" / "lib" / "Lib"
    lib.mkdir(parents=True)
    (lib / "Basic.lean").write_text(LIB)
    return root


def test_render_state_groups_binders_and_numbers_instances():
    assert render_state(["{α : Type u}", "[Group α]", "[inst : Fintype α]", "{a b : α}", "(c : α)", "[DecidableEq α]"],
                        "a * b =\n  c") == ("α : Type u\ninst✝¹ : Group α\ninst : Fintype α\na b c : α\n"
                                            "inst✝ : DecidableEq α\n⊢ a * b = c")
    assert render_state(["(h : p := by simp)"], "q") == "h : p\n⊢ q"
    assert render_state(["{α β : Type*}", "(m n : ℕ)", "(n : ℕ)", "{γ : Sort*}", "(π : α → Type*)"], "m = n") == (
        "α : Type u_1\nβ : Type u_2\nm n✝ n : ℕ\nγ : Sort u_3\nπ : α → Type u_4\n⊢ m = n")


def test_extract_writes_a_statement_level_dataset(tmp_path, capsys):
    project = make_project(tmp_path / "demo")
    exclude = tmp_path / "held_out.json"
    exclude.write_text(json.dumps([{"full_name": "Lib.le_refl'"}]))
    out = tmp_path / "ds"
    assert main(["data", "extract", str(project), "--out", str(out), "--n-val", "1", "--n-test", "1",
                 "--exclude", str(exclude)]) == 0
    assert "6 theorems" in capsys.readouterr().out
    records = {t["full_name"]: t for part in ("train", "val", "test")
               for t in json.loads((out / "random" / f"{part}.json").read_text())}
    train = {t["full_name"] for t in json.loads((out / "random" / "train.json").read_text())}
    assert "Lib.le_refl'" not in train  # held out of train
    assert "hidden" not in records  # private: LeanDojo names it as Lean mangles it
    step = records["chain"]["traced_tactics"][0]
    assert step["tactic"] == "by\n\n  exact le_trans' (le_refl' x) h"
    assert "comment" not in step["tactic"] and step["state_after"] == "no goals"
    # every section variable in scope is a hypothesis, as in Lean v4.10's tactic proofs
    assert step["state_before"] == "G : Type\ninst✝¹ : Mul G\ninst✝ : One G\nx y : Nat\nh : x ≤ y\n⊢ x ≤ y"
    assert [p["full_name"] for p in step["annotated_tactic"][1]] == ["Lib.le_trans'", "Lib.le_refl'"]
    assert step["annotated_tactic"][1][0]["def_path"] == ".lake/packages/lib/Lib/Basic.lean"
    assert "<a>le_trans'</a> (<a>le_refl'</a> x) h" in step["annotated_tactic"][0]
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["counts"]["files"] == 2 and meta["theorems_read"] == 6
    assert meta["not_settled"]["private (left out)"] == 1
    assert meta["not_settled"]["links dropped: local binder"] == 1  # `le_refl'` is a hypothesis there
    assert meta["splits"]["random"]["excluded_from_train"] + meta["splits"]["novel_premises"][
        "excluded_from_train"] >= 1
    assert main(["data", "stats", "--data", str(out)]) == 0  # the layout every other command reads
