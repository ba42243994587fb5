"""`prover data corpus`: small Lake projects built from snippets of real Mathlib files (29dcec07)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from prover.cli import main
from prover.data.project_corpus import build_corpus, project_corpus

# Snippets of Mathlib/Algebra/Order/Group/Defs.lean, Order/Lattice.lean, Data/Nat/Prime.lean,
# MeasureTheory/Decomposition/Lebesgue.lean, LinearAlgebra/TensorAlgebra/Basic.lean,
# Algebra/Group/Subgroup/Basic.lean and BigOperators/Finprod.lean.
BASIC = """/-
Copyright (c) 2017 Mario Carneiro. All rights reserved.
-/
universe u

class Group (α : Type u) where
  one : α
  protected mul : α → α → α
  inv_mul_cancel (a : α) : mul a a = one
  [dec : DecidableEq α]

structure Subgroup (G : Type u) extends Submonoid G, Foo.Bar G where
  inv_mem' {x} : x ∈ carrier → x⁻¹ ∈ carrier

inductive Primrec : (ℕ → ℕ) → Prop
  | zero : Primrec fun _ => 0
  | protected succ : Primrec succ

theorem sup_eq_right : a ⊔ b = b ↔ a ≤ b := le_antisymm_iff
"""

DEFS = """import Algebra.Basic

/-! # Ordered groups -/

open Function

variable {α : Type u}

section Group

variable [Group α] {a b c : α}

/-- Uses `left` co(ntra)variant. -/
@[to_additive (attr := simp)]
theorem inv_le_inv_iff : a⁻¹ ≤ b⁻¹ ↔ b ≤ a := by
  rw [← mul_le_mul_iff_left a, ← mul_le_mul_iff_right b]

@[to_additive neg_nonpos]
theorem one_le_inv' : 1 ≤ a⁻¹ ↔ a ≤ 1 := by simp

theorem one_lt_inv' : 1 < a⁻¹ ↔ a < 1 := by simp

attribute [to_additive neg_pos] one_lt_inv'

attribute [local instance 10] Classical.inhabited_of_nonempty'

end Group

@[to_additive]
theorem MonoidHom.map_finprod_of_injective (g : M →* N) (hg : Injective g) (f : α → M) :
    g (∏ᶠ i, f i) = ∏ᶠ i, g (f i) :=
  g.map_finprod_of_preimage_one (fun _ => (hg.eq_iff' g.map_one).mp) f
#align monoid_hom.map_finprod_of_injective MonoidHom.map_finprod_of_injective
#align add_monoid_hom.map_finsum_of_injective AddMonoidHom.map_finsum_of_injective

alias ⟨le_of_sup_eq, sup_of_le_right⟩ := sup_eq_right

namespace Nat

private def minFacProp (n k : ℕ) :=
  2 ≤ k ∧ k ∣ n

namespace Subgroup

instance (priority := 75) toGroup : Group H := inferInstance

instance : Inhabited H := ⟨1⟩

end Subgroup

end Nat

namespace MeasureTheory.Measure

noncomputable irreducible_def rnDeriv (μ ν : Measure α) : α → ℝ≥0∞ :=
  if h : HaveLebesgueDecomposition μ ν then (Classical.choose h.lebesgue_decomposition).2 else 0

end MeasureTheory.Measure

namespace TensorAlgebra

@[simps symm_apply]
def lift {A : Type*} [Semiring A] : (M →ₗ[R] A) ≃ (TensorAlgebra R M →ₐ[R] A) :=
  { toFun := fun f => f }

end TensorAlgebra
"""

MAIN = """import Algebra.Defs
import Mathlib.Tactic
import Lean

theorem Demo.uses (x : ℕ) : x = x := rfl
"""


def _pos(text: str, needle: str, offset: int = 0) -> list[int]:
    """LeanDojo's [line, column] (both 1-based) of `needle` (+ offset) in `text`."""
    i = text.index(needle) + offset
    return [text.count("\n", 0, i) + 1, i - (text.rfind("\n", 0, i) + 1) + 1]


def make_project(root: Path, lakefile: bool = True, manifest: list[str] = ("algebra",)) -> Path:
    pkg = root / ".lake" / "packages" / "algebra" / "Algebra"
    pkg.mkdir(parents=True)
    (pkg / "Basic.lean").write_text(BASIC)
    (pkg / "Defs.lean").write_text(DEFS)
    (root / "Demo").mkdir()
    (root / "Demo" / "Main.lean").write_text(MAIN)
    (root / "test").mkdir()  # a lower-case top folder holds no library module
    (root / "test" / "Scratch.lean").write_text("theorem scratch : True := trivial\n")
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.24.0\n")
    if lakefile:
        (root / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage demo\n")
    (root / "lake-manifest.json").write_text(json.dumps(
        {"version": "1.1.0", "packagesDir": ".lake/packages",
         "packages": [{"name": n, "type": "git", "rev": "0" * 40} for n in manifest]}))
    return root


def read_rows(out: Path) -> dict[str, dict]:
    return {r["path"]: r for r in map(json.loads, (out / "corpus.jsonl").read_text().splitlines())}


def test_corpus_of_a_lake_project(tmp_path, capsys):
    project = make_project(tmp_path / "demo")
    out = tmp_path / "corpus"
    assert main(["data", "corpus", str(project), "--out", str(out)]) == 0
    assert "demo: 3 files" in capsys.readouterr().out
    rows = read_rows(out)
    basic, defs = ".lake/packages/algebra/Algebra/Basic.lean", ".lake/packages/algebra/Algebra/Defs.lean"
    assert list(rows) == [basic, defs, "Demo/Main.lean"]  # import order; test/ is not a library
    assert rows[defs]["imports"] == [basic] and rows["Demo/Main.lean"]["imports"] == [defs]
    by_name = {p["full_name"]: p for r in rows.values() for p in r["premises"]}
    kinds = {n: p["kind"] for n, p in by_name.items()}
    assert kinds == {
        "Group": "class", "Group.mk": "ctor", "Group.one": "field", "Group.mul": "field",
        "Group.inv_mul_cancel": "field", "Group.dec": "field",
        "Subgroup": "structure", "Subgroup.mk": "ctor", "Subgroup.toSubmonoid": "field",
        "Subgroup.toBar": "field", "Subgroup.inv_mem'": "field",
        "Primrec": "inductive", "Primrec.zero": "ctor", "Primrec.succ": "ctor", "sup_eq_right": "theorem",
        "inv_le_inv_iff": "theorem", "neg_le_neg_iff": "to_additive", "one_le_inv'": "theorem",
        "neg_nonpos": "to_additive", "one_lt_inv'": "theorem", "neg_pos": "to_additive",
        "MonoidHom.map_finprod_of_injective": "theorem", "AddMonoidHom.map_finsum_of_injective": "to_additive",
        "le_of_sup_eq": "alias", "sup_of_le_right": "alias",
        "_private.Algebra.Defs.0.Nat.minFacProp": "def", "Nat.Subgroup.toGroup": "instance",
        "MeasureTheory.Measure.rnDeriv": "irreducible_def", "TensorAlgebra.lift": "def",
        "TensorAlgebra.lift_symm_apply": "simps", "Demo.uses": "theorem"}
    # def_pos: the name, as LeanDojo's provenance (a twin: its explicit name, else `to_additive`).
    assert by_name["neg_le_neg_iff"]["def_pos"] == _pos(DEFS, "to_additive (attr")
    assert by_name["neg_le_neg_iff"]["def_end_pos"] == _pos(DEFS, "to_additive (attr", len("to_additive"))
    assert by_name["neg_pos"]["def_pos"] == _pos(DEFS, "neg_pos")
    assert [by_name[n]["to_additive_name"] for n in ("neg_le_neg_iff", "neg_pos", "AddMonoidHom.map_finsum_of_injective")] \
        == ["guessed", "explicit", "align"]
    assert by_name["AddMonoidHom.map_finsum_of_injective"]["def_pos"] == _pos(DEFS, "to_additive]\ntheorem MonoidHom")
    assert by_name["sup_of_le_right"]["def_pos"] == _pos(DEFS, "sup_of_le_right")
    assert by_name["MeasureTheory.Measure.rnDeriv"]["def_pos"] == _pos(DEFS, "rnDeriv (")
    assert by_name["TensorAlgebra.lift_symm_apply"]["def_pos"] == _pos(DEFS, "symm_apply]")
    assert by_name["_private.Algebra.Defs.0.Nat.minFacProp"]["def_pos"] == _pos(DEFS, "minFacProp")
    # start: the attributes (not the docstring); code: statement only for theorems, no comments.
    iff = by_name["inv_le_inv_iff"]
    assert iff["start"] == _pos(DEFS, "@[to_additive (attr")
    assert iff["code"] == "@[to_additive (attr := simp)]\ntheorem inv_le_inv_iff : a⁻¹ ≤ b⁻¹ ↔ b ≤ a"
    # variable binders the statement uses come first in args (α through a, b; the Group instance).
    assert iff["args"] == ["{α : Type u}", "[Group α]", "{a b c : α}"] and iff["goal"] == "a⁻¹ ≤ b⁻¹ ↔ b ≤ a"
    assert by_name["MonoidHom.map_finprod_of_injective"]["args"][:1] == ["{α : Type u}"]
    assert "[Group α]" not in by_name["MonoidHom.map_finprod_of_injective"]["args"]  # its section ended
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["packages"] == {"demo": {"files": 1, "premises": 1}, "algebra": {"files": 2, "premises": 30}}
    assert meta["problems"] == {"not_a_lake_project": 0, "packages_missing_sources": 0, "files_unreadable": 0,
                                "duplicate_modules": 0, "links_not_followed": 0}
    assert meta["uncertain"] == {"anonymous instances (Lean names them; not listed)": 1,
                                 "irreducible_def equations (<name>_def, not listed)": 1,
                                 "to_additive names guessed (no explicit name, no #align)": 1}
    assert meta["imports_outside_corpus"] == {"unknown": 1, "Lean core": 1}
    assert meta["unknown_imports"] == {"Mathlib.Tactic": 1}
    assert meta["by_kind"]["to_additive"] == 4 and meta["premises"] == 31


def test_bad_input_is_one_line_each_and_the_rest_is_written(tmp_path, capsys):
    project = make_project(tmp_path / "demo", lakefile=False, manifest=["algebra", "batteries"])
    (project / "Demo" / "Broken.lean").write_text("theorem kept : True := trivial\n/- never closed\ntheorem lost : True := trivial\n")
    (project / "Demo" / "Latin1.lean").write_bytes("theorem caf\xe9 : True := trivial\n".encode("latin-1"))
    out = tmp_path / "corpus"
    assert main(["data", "corpus", str(project), "--out", str(out)]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning")]
    assert len(err) == 4
    assert "is not a Lake project (no lakefile.lean or lakefile.toml)" in err[0]
    assert "package batteries: in lake-manifest.json but not in .lake/packages" in err[1]
    assert "Demo/Broken.lean cannot be read past line 2 (unterminated comment from line 2)" in err[2]
    assert "Demo/Latin1.lean cannot be read past line 1 (not valid UTF-8 at byte 11)" in err[3]
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["problems"] == {"not_a_lake_project": 1, "packages_missing_sources": 1, "files_unreadable": 2,
                                "duplicate_modules": 0, "links_not_followed": 0}
    rows = read_rows(out)
    assert [p["full_name"] for p in rows["Demo/Broken.lean"]["premises"]] == ["kept"]
    assert rows["Demo/Latin1.lean"]["premises"] == []
    assert meta["premises"] == 32  # the rest is all there


def test_nothing_to_read_is_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["data", "corpus", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "no .lean source files" in err[0]
    assert not (tmp_path / "o").exists()


def test_the_corpus_of_a_project_state_is_built_once(tmp_path):
    project = make_project(tmp_path / "demo")
    first = project_corpus(project, tmp_path / "cache", progress=False)
    stamp = (first / "corpus.jsonl").stat().st_mtime_ns
    assert project_corpus(project, tmp_path / "cache", progress=False) == first
    assert (first / "corpus.jsonl").stat().st_mtime_ns == stamp  # reused, not rebuilt
    manifest = project / "lake-manifest.json"
    manifest.write_text(manifest.read_text().replace("0" * 40, "1" * 40))  # a dependency moved
    second = project_corpus(project, tmp_path / "cache", progress=False)
    assert second != first and (second / "corpus.jsonl").is_file()
    assert json.loads((second / "metadata.json").read_text())["key"] in second.name


FAKE_BIN = Path(__file__).resolve().parent / "fake_repl"


def _lean_line(name: str, module: str, kind: str, text: str, start: str, end: str, sel: str) -> str:
    """One line of Lean's listing (check_command): positions line 1-based, column 0-based."""
    def lc(needle: str, after: bool = False) -> list[int]:
        line, col = _pos(text, needle, len(needle) if after else 0)
        return [line, col - 1]
    return "\t".join(map(str, [name, module, kind, *lc(start), *lc(end, after=True), *lc(sel), *lc(sel, after=True)]))


def test_repl_backend_fixes_the_scan_from_leans_constants(tmp_path, monkeypatch, data_root, capsys):
    """--backend repl through the fake Lean REPL (tests/fake_repl, lean-interact's own process
    code): its answer to the listing command is recorded in Lean's answer shape for this project
    (there is no real transcript of this command). Lean names the anonymous instance (added),
    does not know `Subgroup.toBar` (removed), puts `rnDeriv`'s name elsewhere (fixed), and its
    generated names (`.rec`, `.match_1`) are not premises."""
    from prover.data.corpus import module_name
    from prover.data.corpus_lean_check import check_command, top_modules
    project = make_project(tmp_path / "demo")
    listing = "\n".join([
        _lean_line("inv_le_inv_iff", "Algebra.Defs", "theorem", DEFS, "theorem inv_le", "by\n  rw [← mul_le_mul_iff_left a, ← mul_le_mul_iff_right b]", "inv_le_inv_iff"),
        _lean_line("Nat.Subgroup.instInhabitedH", "Algebra.Defs", "def", DEFS, "instance : Inhabited", "⟨1⟩", "instance : Inhabited"),
        _lean_line("MeasureTheory.Measure.rnDeriv", "Algebra.Defs", "def", DEFS, "irreducible_def rnDeriv", "else 0", "irreducible_def"),
        _lean_line("inv_le_inv_iff.match_1", "Algebra.Defs", "def", DEFS, "theorem inv_le", "by", "inv_le_inv_iff"),
        _lean_line("Subgroup.rec", "Algebra.Basic", "rec", BASIC, "structure Subgroup", "carrier\n", "Subgroup"),
        _lean_line("Subgroup.toSubmonoid", "Algebra.Basic", "def", BASIC, "Submonoid G,", "Submonoid G", "Submonoid G"),
        _lean_line("Demo.uses", "Demo.Main", "theorem", MAIN, "theorem Demo", "rfl", "Demo.uses"),
    ])
    # Everything else the scan found is in Lean's listing too (as the real listing would be).
    rows_dir = tmp_path / "scan"
    build_corpus(project, rows_dir, progress=False)
    rows = [json.loads(x) for x in (rows_dir / "corpus.jsonl").read_text().splitlines()]
    module_of = {r["path"]: module_name(r["path"]) for r in rows}
    listed = {line.split("\t")[0] for line in listing.splitlines()}
    extra = [f"{p['full_name']}\t{module_of[r['path']]}\t{p['kind']}\t{p['start'][0]}\t{p['start'][1] - 1}\t"
             f"{p['end'][0]}\t{p['end'][1] - 1}\t{p['def_pos'][0]}\t{p['def_pos'][1] - 1}\t"
             f"{p['def_end_pos'][0]}\t{p['def_end_pos'][1] - 1}"
             for r in rows for p in r["premises"] if p["full_name"] not in listed | {"Subgroup.toBar"}]
    cmd = check_command(top_modules(rows, module_of))
    assert cmd.startswith("import Demo.Main\nopen Lean in\n#eval show CoreM Unit")  # the top module only
    answer = {"messages": [{"severity": "info", "pos": {"line": 3, "column": 0}, "endPos": {"line": 3, "column": 5},
                            "data": "\n".join([listing, *extra]) + "\n"}], "env": 0}
    transcripts = tmp_path / "transcripts" / "test"
    transcripts.mkdir(parents=True)
    (transcripts / "corpus.in").write_text(json.dumps({"cmd": cmd}) + "\n")
    (transcripts / "corpus.expected.out").write_text(json.dumps(answer) + "\n")
    (tmp_path / "repl").mkdir()
    (tmp_path / "repl" / "lean-toolchain").write_text("leanprover/lean4:v4.24.0\n")
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_REPL_TRANSCRIPTS", str(transcripts / "corpus.in"))
    out = tmp_path / "checked"
    assert main(["data", "corpus", str(project), "--out", str(out), "--backend", "repl",
                 f"repl.repl_path={tmp_path / 'repl'}", "repl.memory_gb=0.5", "progress=false"]) == 0
    assert "1 added, 1 removed, 1 name positions fixed" in capsys.readouterr().err
    meta = json.loads((out / "metadata.json").read_text())
    check = meta["lean_check"]
    assert meta["backend"] == "repl" and check["constants"] == 7 + len(extra)
    assert (check["missed_added"], check["invented_removed"], check["def_pos_fixed"]) == (1, 1, 1)
    assert check["examples"]["missed_added"] == ["Nat.Subgroup.instInhabitedH"]
    assert check["examples"]["invented_removed"] == ["Subgroup.toBar"]
    assert check["examples"]["def_pos_fixed"] == ["MeasureTheory.Measure.rnDeriv"]
    by_name = {p["full_name"]: p for r in read_rows(out).values() for p in r["premises"]}
    added = by_name["Nat.Subgroup.instInhabitedH"]
    assert added["from_lean"] is True and added["code"] == "instance : Inhabited H := ⟨1⟩"
    assert added["start"] == _pos(DEFS, "instance : Inhabited") and added["kind"] == "def"
    assert by_name["MeasureTheory.Measure.rnDeriv"]["def_pos"] == _pos(DEFS, "irreducible_def rnDeriv")
    assert "Subgroup.toBar" not in by_name and "inv_le_inv_iff.match_1" not in by_name
    assert meta["premises"] == 31 and len(by_name) == 31


def test_repl_backend_without_lean_is_one_line(tmp_path, monkeypatch, capsys):
    project = make_project(tmp_path / "demo")
    monkeypatch.setenv("PATH", str(tmp_path))  # no lake, no elan
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["data", "corpus", str(project), "--out", str(tmp_path / "o"), "--backend", "repl"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Lean toolchain" in err[0]


def test_priors_rank_the_project_corpus_with_training_proofs_from_elsewhere(tmp_path, mini_root):
    """A fusion with the usage and locality priors over a project's corpus: the priors count
    mathlib-src-mini's training proofs (retrieval.training_data) and rank this corpus; a
    theorem importing Algebra.Defs gets premises of it and of what it imports only."""
    from prover.search.components import premise_source
    from retriever.settings import RetrieverConfig
    from retriever.base import ImportsContext
    project = make_project(tmp_path / "demo")
    folder = project_corpus(project, tmp_path / "cache", progress=False)
    source = premise_source(RetrieverConfig("bm25+usage+locality", k=10, corpus=str(folder), device="cpu",
                                            training_data=str(mini_root)))
    (ranked,) = source.retrieve(["a b : α\n⊢ a⁻¹ ≤ b⁻¹ ↔ b ≤ a"], [ImportsContext(("Algebra.Defs",))])
    assert len(ranked) == 10 and source.contexts_dropped == 0
    assert {p.path for p in ranked} <= {".lake/packages/algebra/Algebra/Basic.lean",
                                        ".lake/packages/algebra/Algebra/Defs.lean"}
    assert {"inv_le_inv_iff", "neg_le_neg_iff"} & {p.full_name for p in ranked}  # BM25's best, fused
    # Without training proofs the priors say where to find them, in one line.
    with pytest.raises(Exception, match="no split random/train under .*set retriever.usage_split"):
        premise_source(RetrieverConfig("bm25+usage+locality", k=5, corpus=str(folder), device="cpu"))


def test_prove_sorries_without_corpus_uses_the_projects(tmp_path):
    """What `prove-sorries SUBFOLDER --retriever bm25` does without --corpus (its two steps; the
    command itself is exercised in tests/test_prove_sorries.py): the corpus of the project
    holding the subfolder (the nearest lean-toolchain up) is built once, and each sorry's
    context is its file's path in that project."""
    import shutil
    from prover.commands.prove_sorries import _prefix_in_project
    from prover.config import load_config
    from prover.search.project_premises import ensure_corpus
    from prover.search.settings import SearchBenchmarkConfig
    repo = Path(__file__).resolve().parents[1]
    project = tmp_path / "lean_sorry_project"
    shutil.copytree(repo / "tests" / "fixtures" / "lean_sorry_project", project)
    cfg = load_config(SearchBenchmarkConfig, None, ["retriever.name=bm25", f"retriever.corpus_cache={tmp_path / 'c'}",
                                                    "progress=false"])
    folder = Path(ensure_corpus(cfg, project))
    assert cfg.retriever.corpus == str(folder) and folder.parent == tmp_path / "c"
    assert {"SorryProject/Basic.lean", "SorryProject/Algebra.lean"} <= set(read_rows(folder))
    assert _prefix_in_project(project / "SorryProject", str(project)) == "SorryProject/"
    assert _prefix_in_project(project, str(project)) == ""
    assert ensure_corpus(cfg, project) == str(folder)  # given (now) a corpus: kept as it is
    cfg.retriever.name, cfg.retriever.corpus = "none", None
    assert ensure_corpus(cfg, project) is None  # no retriever, no corpus
    cfg.retriever.name = "bm25"
    with pytest.raises(ValueError, match="needs a premise corpus: give --corpus"):
        ensure_corpus(cfg, None)


def test_a_linked_folder_is_followed_once_and_a_loop_refused(tmp_path, capsys):
    """A `Mathlib` that is a symlink (to a checkout elsewhere) is read; a link back to a folder
    above it is refused in one line and the rest is written."""
    elsewhere = tmp_path / "checkouts" / "Demo"
    elsewhere.mkdir(parents=True)
    (elsewhere / "Main.lean").write_text(MAIN)
    (elsewhere / "Again").symlink_to(elsewhere, target_is_directory=True)  # a loop
    project = tmp_path / "linked"
    project.mkdir()
    (project / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage linked\n")
    (project / "Demo").symlink_to(elsewhere, target_is_directory=True)
    (project / "Twin").symlink_to(elsewhere, target_is_directory=True)  # the same folder again: read once
    out = tmp_path / "corpus"
    assert main(["data", "corpus", str(project), "--out", str(out)]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning")]
    rows = read_rows(out)
    assert list(rows) == ["Demo/Main.lean"]
    assert [p["full_name"] for p in rows["Demo/Main.lean"]["premises"]] != []
    loop, twin = sorted(err, key=lambda line: "Twin" in line)
    assert len(err) == 2 and "Demo/Again" in loop and "(a loop), not followed" in loop
    assert "Twin ->" in twin and "already read through another path" in twin
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["problems"]["links_not_followed"] == 2
