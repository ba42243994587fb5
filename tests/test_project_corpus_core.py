"""Lean core in a project's corpus, and the names `@[reassoc]` and `@[simps]` generate (issue 59).

`prover data corpus` reads the toolchain's own sources when `lean --print-prefix` leads to them
(here a stand-in `lean` prints the prefix of tests/fixtures/lean-core, a miniature `src/lean`
written for these tests), with LeanDojo's paths for them, and a project file's `import Init…`
then resolves to those files instead of being counted as outside the corpus."""
from __future__ import annotations

import json
import os
import shutil
import stat

from prover.data.lean_decls import LeanFile
from prover.data.lean_premises import file_premises
from prover.data.project_corpus import build_corpus
from tests.conftest import REPO

CORE = REPO / "tests" / "fixtures" / "lean-core"


def fake_lean(bin_dir, prefix):
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "lean"
    script.write_text(f"#!/bin/sh\n[ \"$1\" = --print-prefix ] && echo '{prefix}' && exit 0\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def project(root):
    (root / "Demo").mkdir(parents=True)
    (root / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage demo\n")
    (root / "Demo" / "Basic.lean").write_text(
        "import Init.Data.Option.Lemmas\n\ntheorem demo_ok (n : Nat) : n = n := rfl\n")
    return root


def test_the_toolchains_sources_join_the_corpus(tmp_path, monkeypatch):
    prefix = tmp_path / "toolchain"
    shutil.copytree(CORE / "src", prefix / "src")
    fake_lean(tmp_path / "bin", prefix)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    meta = build_corpus(project(tmp_path / "demo"), tmp_path / "out", progress=False)
    rows = [json.loads(line) for line in (tmp_path / "out" / "corpus.jsonl").read_text().splitlines()]
    by_path = {r["path"]: r for r in rows}
    lemmas = by_path[".lake/packages/lean4/src/lean/Init/Data/Option/Lemmas.lean"]
    assert [p["full_name"] for p in lemmas["premises"]] == ["Option.getD_of_ne_none", "Option.isSome_none"]
    assert lemmas["imports"] == [".lake/packages/lean4/src/lean/Init/Data/Option/Basic.lean"]
    names = {p["full_name"] for r in rows for p in r["premises"]}
    assert {"rfl", "Nat.lt_irrefl", "Nat.succ_le_of_lt", "Option.getD", "Prod.fst", "Std.Sat.Literal"} <= names
    # The project's `import Init…` is a corpus file now, not an import outside the corpus.
    assert by_path["Demo/Basic.lean"]["imports"] == [".lake/packages/lean4/src/lean/Init/Data/Option/Lemmas.lean"]
    assert meta["packages"]["lean4"] == {"files": 7, "premises": len(names) - 1}
    assert "Lean core" not in meta["imports_outside_corpus"]


def test_without_the_sources_core_stays_outside(tmp_path, monkeypatch):
    fake_lean(tmp_path / "bin", tmp_path / "no-sources-here")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    meta = build_corpus(project(tmp_path / "demo"), tmp_path / "out", progress=False)
    assert "lean4" not in meta["packages"] and meta["imports_outside_corpus"] == {"Lean core": 1}


def test_reassoc_and_simps_names():
    src = """namespace CategoryTheory

@[simps]
def F : C ⥤ D where
  obj X := X
  map f := f
  map_id := by simp

@[simps]
def e : α ≃ β :=
  { toFun := f, invFun := g, left_inv := fun x => rfl, right_inv := by simp }

@[simps]
def pt : Point := ⟨1, 2⟩

@[reassoc (attr := simp)]
theorem comp_id' (f : X ⟶ Y) : f ≫ 𝟙 Y = f := by simp

theorem foo (f : X ⟶ Y) : f = f := rfl

attribute [reassoc] foo

end CategoryTheory
"""
    scan = file_premises(LeanFile.scan(src, "M.lean"), "M")
    kinds = {r["full_name"]: r["kind"] for r in scan.rows}
    assert {k for k, v in kinds.items() if v == "simps"} == {
        "CategoryTheory.F_obj", "CategoryTheory.F_map", "CategoryTheory.e_apply", "CategoryTheory.e_symm_apply"}
    assert {k for k, v in kinds.items() if v == "reassoc"} == {"CategoryTheory.comp_id'_assoc",
                                                               "CategoryTheory.foo_assoc"}
    assert scan.uncertain["@[simps] without projection names whose body writes no fields (generated lemmas "
                          "not listed)"] == 1  # pt: an anonymous constructor names no field
