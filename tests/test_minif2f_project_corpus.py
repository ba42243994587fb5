"""`prover benchmark --theorems minif2f --env repl` without `--corpus`: the premises of the project.

On the fake Lean REPL (tests/fake_repl): the run builds the corpus of `env.repl.project` (a
miniF2F-lean4 stand-in with a Mathlib package) and its retriever ranks premises from it for each
theorem, only from the modules the theorem's header imports (`import Mathlib`): neither the
package Mathlib does not import nor the project's own MiniF2F file is accessible.
"""
from __future__ import annotations

import json

from tests.conftest import REPO
from tests.search_doubles import RecordingSpec
from tests.test_repl_commands import fake_lean, repl_overrides  # noqa: F401 - the fixture

# From Mathlib/Logic/Basic.lean and Mathlib/Order/Basic.lean (29dcec07).
LOGIC = """namespace Nat

theorem succ_ne_self (n : ℕ) : succ n ≠ n := by
  induction n <;> simp [*]

end Nat

theorem eq_self_iff_true (a : α) : a = a ↔ True := iff_of_true rfl trivial

theorem ne_of_gt' {a b : α} [Preorder α] (h : b < a) : a ≠ b := fun he => absurd h (he ▸ lt_irrefl a)
"""


def make_minif2f_project(project):
    (project / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage minif2f\nrequire mathlib\n")
    (project / "lake-manifest.json").write_text(json.dumps({"version": "1.1.0", "packages": [
        {"name": "mathlib", "type": "git", "rev": "a" * 40}, {"name": "other", "type": "git", "rev": "b" * 40}]}))
    mathlib = project / ".lake" / "packages" / "mathlib"
    (mathlib / "Mathlib" / "Logic").mkdir(parents=True)
    (mathlib / "Mathlib.lean").write_text("import Mathlib.Logic.Basic\n")
    (mathlib / "Mathlib" / "Logic" / "Basic.lean").write_text(LOGIC)
    other = project / ".lake" / "packages" / "other"
    other.mkdir()
    (other / "Other.lean").write_text("theorem other_x_eq_x (x : Nat) : x = x := rfl\n")
    (project / "MiniF2F").mkdir()
    (project / "MiniF2F" / "Valid.lean").write_text("import Mathlib\n\ntheorem foo (x : Nat) : x = x := by sorry\n")


def test_benchmark_minif2f_builds_and_ranks_the_projects_corpus(fake_lean):  # noqa: F811
    from prover.config import load_config
    from prover.search.benchmark import run_benchmark
    from prover.search.settings import SearchBenchmarkConfig
    make_minif2f_project(fake_lean / "project")
    log = fake_lean / "premises.jsonl"
    cache = fake_lean / "corpora"
    cfg = load_config(SearchBenchmarkConfig, str(REPO / "configs" / "search" / "tiny.yaml"), [
        "theorems.source=minif2f", f"theorems.minif2f_path={fake_lean / 'minif2f.json'}",
        "theorems.split=test", "env.name=repl", "retriever.name=bm25", "retriever.corpus=null",
        f"retriever.corpus_cache={cache}",
        "ray.num_workers=1", f"out_dir={fake_lean / 'out'}", "search.max_expansions=4", *repl_overrides(fake_lean)])
    script = {"x : ℕ\n⊢ x = x": ["induction x"],
              "case zero\n⊢ 0 = 0\n\ncase succ\nn✝ : ℕ\na✝ : n✝ = n✝\n⊢ n✝ + 1 = n✝ + 1": ["next => rfl"],
              "⊢ 3 = 7": ["exact?"]}
    summary = run_benchmark(cfg, tactic_spec=RecordingSpec(script, str(log)))
    # The corpus was built once, from the project and its packages, in the cache.
    (folder,) = list(cache.iterdir())
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["packages"] == {"project": {"files": 1, "premises": 1}, "mathlib": {"files": 2, "premises": 3},
                                "other": {"files": 1, "premises": 1}}
    records = {r["theorem"]: r for r in map(json.loads, (fake_lean / "out" / "repl-bm25" / "results.jsonl")
                                             .read_text().splitlines())}
    assert set(records) == {"foo", "test"} and records["foo"]["retriever"] == "bm25"
    # Every state of every theorem got premises ranked from the corpus: Mathlib's only.
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    states = {a["state"] for a in asked}
    assert {"x : ℕ\n⊢ x = x", "⊢ 3 = 7"} <= states
    mathlib = {"Nat.succ_ne_self", "eq_self_iff_true", "ne_of_gt'"}
    for a in asked:
        assert a["premises"] and set(a["premises"]) <= mathlib, a
    # the same corpus is what the run's settings record
    run = json.loads((fake_lean / "out" / "repl-bm25" / "run.json").read_text())
    assert str(folder) in json.dumps(run)
    assert summary["runs"]["repl-bm25"]["theorems"] == 2
