"""A Lake project's theorems from its source (`prover data theorems`), and MiniF2F read from the
miniF2F-lean4 checkout a benchmark runs on, with no data folder at all.

`tests/fixtures/miniF2F-lean4/` is yangky11/miniF2F-lean4 at 5746b7d (its Lean files, lakefile,
manifest and toolchain; MIT License, its LICENSE file beside them): the reference is the shared
`minif2f/minif2f.json`, the list our benchmarks ran on until now.
"""
from __future__ import annotations

import json
import os

from prover.cli import main
from tests.conftest import REPO, require
from tests.search_doubles import ScriptedSpec
from tests.test_repl_commands import fake_lean, repl_overrides  # noqa: F401 - the fixture

MINIF2F = REPO / "tests" / "fixtures" / "miniF2F-lean4"


def test_theorems_of_minif2f_reproduce_the_shared_list(data_root, tmp_path, capsys):
    ref = json.loads(require(data_root / "minif2f" / "minif2f.json").read_text())
    out = tmp_path / "minif2f.json"
    assert main(["data", "theorems", str(MINIF2F), "--sorries", "--out", str(out)]) == 0
    assert "488 theorems with a sorry from 491 files (244 test, 244 valid)" in capsys.readouterr().out
    got = json.loads(out.read_text())
    assert got["lean_toolchain"] == ref["lean_toolchain"] and got["mathlib_rev"] == ref["mathlib_rev"]
    assert got["problems"] == []
    keys = ("full_name", "split", "file_path", "start", "header", "statement")
    assert [{k: t[k] for k in keys} for t in got["theorems"]] == [{k: t[k] for k in keys} for t in ref["theorems"]]
    assert all(t["sorry"] and t["whole_sorry"] for t in got["theorems"])


PROJECT_FILE = '''import Mathlib.Logic.Basic

open Nat

namespace Demo

/-- A doc comment: not part of the header nor of the statement. -/
@[simp] theorem proved (n : Nat) : n + 0 = n := by
  simp

set_option maxHeartbeats 400 in
lemma partly (a b : Nat) (h : a = b) : b = a := by
  constructor
  · sorry

theorem by_eqns : Nat → Nat → Prop
  | 0, _ => True
  | _, _ => sorry

end Demo

example : True := sorry
'''


def test_theorems_of_a_project_with_sorries(tmp_path, capsys):
    project = tmp_path / "demo"
    (project / "Demo").mkdir(parents=True)
    (project / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage demo\n")
    (project / "Demo" / "Basic.lean").write_text(PROJECT_FILE)
    out = tmp_path / "all.json"
    assert main(["data", "theorems", str(project), "--out", str(out)]) == 0
    rows = {t["full_name"]: t for t in json.loads(out.read_text())["theorems"]}
    assert list(rows) == ["Demo.proved", "Demo.partly", "Demo.by_eqns"]  # no example: it has no name
    proved, partly = rows["Demo.proved"], rows["Demo.partly"]
    assert proved["start"] == [8, 9] and proved["statement"] == "theorem proved (n : Nat) : n + 0 = n"
    assert proved["header"] == "import Mathlib.Logic.Basic\n\nopen Nat\n\nnamespace Demo\n"
    assert (proved["sorry"], partly["sorry"], partly["whole_sorry"]) == (False, True, False)
    assert partly["statement"] == "set_option maxHeartbeats 400 in\nlemma partly (a b : Nat) (h : a = b) : b = a"
    assert partly["header"].endswith("  simp\n") and rows["Demo.by_eqns"]["sorry"] is True
    assert main(["data", "theorems", str(project), "--sorries", "--out", str(tmp_path / "s.json")]) == 0
    kept = [t["full_name"] for t in json.loads((tmp_path / "s.json").read_text())["theorems"]]
    assert kept == ["Demo.partly", "Demo.by_eqns"]
    capsys.readouterr()
    assert main(["data", "theorems", str(tmp_path / "nothing"), "--out", str(tmp_path / "n.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a folder" in err[0] and not (tmp_path / "n.json").exists()


def make_fake_minif2f(project) -> None:
    """A miniF2F-lean4 checkout in small: lakefile, manifest, toolchain (the fixture's), two
    test files and a valid one."""
    (project / "lakefile.lean").write_text((MINIF2F / "lakefile.lean").read_text())
    (project / "lake-manifest.json").write_text((MINIF2F / "lake-manifest.json").read_text())
    for split, name, statement in (("Test", "foo", "theorem foo (x : Nat) : x = x"),
                                   ("Test", "test", "theorem test : 3 = 7"),
                                   ("Valid", "v", "theorem v : 0 < 1")):
        (project / "MiniF2F" / split).mkdir(parents=True, exist_ok=True)
        (project / "MiniF2F" / split / f"{name}.lean").write_text(f"import Mathlib\n\n{statement} := by sorry\n")


def test_benchmark_minif2f_reads_the_checkout_with_no_data_folder(fake_lean, tmp_path, monkeypatch):  # noqa: F811
    """No PROVER_DATA, no ../shared/data, an empty per-user data folder: the theorems come from
    env.repl.project, and the REPL stand-in answers them from Lean's recorded transcripts."""
    from prover.config import load_config
    from prover.search.benchmark import run_benchmark
    from prover.search.settings import SearchBenchmarkConfig
    monkeypatch.delenv("PROVER_DATA", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    work = tmp_path / "work" / "clone"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    # Ray's workers import the scripted tactics from this repository's tests package; from a
    # folder outside it they find it only on PYTHONPATH (a local cluster inherits it).
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    assert not (work.parent / "shared").exists()
    make_fake_minif2f(fake_lean / "project")
    cfg = load_config(SearchBenchmarkConfig, None, [
        "theorems.source=minif2f", "theorems.split=test", "env.name=auto", "ray.num_workers=1",
        "out_dir=out", "search.max_expansions=4", "progress=false", *repl_overrides(fake_lean)])
    script = {"x : ℕ\n⊢ x = x": ["induction x"],
              "case zero\n⊢ 0 = 0\n\ncase succ\nn✝ : ℕ\na✝ : n✝ = n✝\n⊢ n✝ + 1 = n✝ + 1": ["next => rfl"],
              "⊢ 3 = 7": ["exact?"]}
    summary = run_benchmark(cfg, tactic_spec=ScriptedSpec(script))
    records = {r["theorem"]: r for r in map(json.loads, (work / "out" / "repl-none" / "results.jsonl")
                                             .read_text().splitlines())}
    assert set(records) == {"foo", "test"} and {r["file_path"] for r in records.values()} == {
        "MiniF2F/Test/foo.lean", "MiniF2F/Test/test.lean"}
    assert records["foo"]["tree"]["outcomes"] == {"new_state": 2} and records["test"]["tree"]["outcomes"] == {"error": 1}
    assert summary["runs"]["repl-none"]["theorems"] == 2
    (cached,) = list((work / "runs" / "theorems").iterdir())  # read once, keyed by the checkout's state
    assert json.loads(cached.read_text())["files"] == 3


def test_minif2f_without_a_checkout_or_list_says_what_to_give(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PROVER_DATA", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    code = main(["benchmark", "--theorems", "minif2f", "--env", "replay", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "env.repl.project=PATH/TO/miniF2F-lean4" in err[0] and "prover data theorems" in err[0]
    assert str(tmp_path / "xdg" / "lean-premise-prover" / "minif2f" / "minif2f.json") in err[0]
    assert os.environ.get("PROVER_DATA") is None
