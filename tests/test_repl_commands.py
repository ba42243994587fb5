"""`prover benchmark` and `prover prove-sorries` on `--env repl`, end to end on the fake Lean REPL.

Every Lean answer comes from the REPL's own transcripts (tests/fake_repl): a request no
transcript recorded makes the fake REPL exit, which the env handles as a crash (restart, then
the theorem is recorded as an environment failure, and the run goes on).
"""
from __future__ import annotations

import json
import os

import pytest

from prover.env.lean_query import is_query
from prover.env.lean_version import EnvChoiceError, choose_env
from tests.conftest import REPO
from tests.lean_standin import query_answer
from tests.search_doubles import ScriptedSpec, save_untrained_generator

FAKE_BIN = REPO / "tests" / "fake_repl"


@pytest.fixture
def fake_lean(data_root, tmp_path, monkeypatch):
    """A Lean v4.24.0 project and REPL folder, the fake `lake` first on PATH, and the Mathlib
    transcripts the MiniF2F-shaped theorems below are answered from."""
    base = data_root / "lean-repl" / "v4.24.0"
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_REPL_TRANSCRIPTS", os.pathsep.join(
        str(base / "test" / "Mathlib" / "test" / f"{n}.in") for n in ("induction", "exact")))
    for folder in ("project", "repl"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "lean-toolchain").write_text((base / "lean-toolchain").read_text())
    theorems = {"url": "https://github.com/example/fake-minif2f", "commit": "0" * 40,
                "lean_toolchain": "leanprover/lean4:v4.24.0", "theorems": [
                    {"split": "test", "full_name": "foo", "file_path": "T/foo.lean", "start": [3, 1],
                     "header": "import Mathlib", "statement": "theorem foo (x : Nat) : x = x"},
                    {"split": "test", "full_name": "test", "file_path": "T/test.lean", "start": [3, 1],
                     "header": "import Mathlib", "statement": "theorem test : 3 = 7"},
                    {"split": "valid", "full_name": "v", "file_path": "T/v.lean", "start": [3, 1],
                     "header": "import Mathlib", "statement": "theorem v : 0 < 1"}]}
    (tmp_path / "minif2f.json").write_text(json.dumps(theorems))
    return tmp_path


def repl_overrides(root) -> list[str]:
    return [f"env.repl.project={root / 'project'}", f"env.repl.repl_path={root / 'repl'}",
            "env.repl.memory_gb=0.5", "env.repl.timeout=20"]


def test_benchmark_minif2f_on_the_repl_with_ray(fake_lean):
    """Ray workers, each with its REPL; a scripted generator that proposes recorded tactics."""
    from prover.config import load_config
    from prover.search.benchmark import run_benchmark
    from prover.search.settings import SearchBenchmarkConfig
    cfg = load_config(SearchBenchmarkConfig, str(REPO / "configs" / "search" / "tiny.yaml"), [
        "theorems.source=minif2f", f"theorems.minif2f_path={fake_lean / 'minif2f.json'}",
        "theorems.split=test", "env.name=auto", "retriever.name=none", "ray.num_workers=1",
        f"out_dir={fake_lean / 'out'}", "search.max_expansions=4", *repl_overrides(fake_lean)])
    script = {"x : ℕ\n⊢ x = x": ["induction x"],
              "case zero\n⊢ 0 = 0\n\ncase succ\nn✝ : ℕ\na✝ : n✝ = n✝\n⊢ n✝ + 1 = n✝ + 1": ["next => rfl"],
              "⊢ 3 = 7": ["exact?"]}
    summary = run_benchmark(cfg, tactic_spec=ScriptedSpec(script))
    records = {r["theorem"]: r for r in map(json.loads, (fake_lean / "out" / "repl-none" / "results.jsonl")
                                             .read_text().splitlines())}
    # auto: MiniF2F's v4.24.0 runs on the REPL
    assert set(records) == {"foo", "test"} and {r["env"] for r in records.values()} == {"repl"}
    foo, test = records["foo"], records["test"]
    assert foo["status"] == "failed" and foo["tree"]["nodes"] == 3 and foo["tree"]["outcomes"] == {"new_state": 2}
    assert test["status"] == "failed" and test["tree"]["outcomes"] == {"error": 1}
    assert summary["runs"]["repl-none"]["theorems"] == 2


def test_benchmark_cli_writes_results_and_resumes(fake_lean, tmp_path, capsys):
    """The real command with a (tiny, untrained) generator: its tactics were never recorded, so
    the fake REPL dies on each; each theorem ends as an environment failure and the run goes on."""
    from prover.cli import main
    gen = save_untrained_generator(tmp_path / "gen")
    argv = ["benchmark", "--config", str(REPO / "configs" / "search" / "tiny.yaml"), "--theorems", "minif2f",
            "--split", "test", "--env", "repl", "--retriever", "none", "--generator", str(gen), "--workers", "1",
            "--out", str(fake_lean / "cli"), f"theorems.minif2f_path={fake_lean / 'minif2f.json'}",
            "search.max_expansions=1", "generator.num_tactics=2", *repl_overrides(fake_lean)]
    assert main(argv) == 0
    results = fake_lean / "cli" / "repl-none" / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["theorem"] for r in records) == ["foo", "test"]
    for r in records:  # a tactic Lean was asked about killed the REPL twice; none proved
        assert r["env"] == "repl" and r["status"] in ("error", "failed")
        if r["status"] == "error":
            assert r["stop_reason"] == "env_crash" and [f["kind"] for f in r["env_failures"]] == ["crash", "crash"]
    assert "pass@1" in capsys.readouterr().out
    assert main(argv) == 0  # a rerun finds every theorem done and appends nothing
    assert len(results.read_text().splitlines()) == 2


def test_leandojo_refused_on_current_lean(fake_lean, capsys):
    from prover.cli import main
    code = main(["benchmark", "--theorems", "minif2f", "--env", "leandojo", "--out", str(fake_lean / "o"),
                 f"theorems.minif2f_path={fake_lean / 'minif2f.json'}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "LeanDojo#211" in err[0] and "v4.24.0" in err[0]


def test_too_many_repl_workers_refused(fake_lean, capsys):
    from prover.cli import main
    code = main(["benchmark", "--theorems", "minif2f", "--env", "repl", "--workers", "64", "--out", str(fake_lean / "o"),
                 f"theorems.minif2f_path={fake_lean / 'minif2f.json'}", f"env.repl.project={fake_lean / 'project'}",
                 f"env.repl.repl_path={fake_lean / 'repl'}", "env.repl.memory_gb=8",
                 "ray.local_num_cpus=64"])  # CPUs enough (a 64-CPU Ray): the memory check is what refuses
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "64 workers" in err[0] and "512 GiB needed" in err[0]
    assert not (fake_lean / "o").exists()  # refused before anything was written


def test_env_choice():
    assert choose_env("auto", "leanprover/lean4:v4.24.0") == "repl"
    assert choose_env("auto", "leanprover/lean4:v4.10.0-rc1") == "repl"
    assert choose_env("auto", "leanprover/lean4:v4.7.0") == "leandojo"
    assert choose_env("leandojo", "leanprover/lean4:v4.10.0-rc1") == "leandojo"  # ReProver's runs
    for refused in ("leanprover/lean4:v4.12.0-rc1", "leanprover/lean4:v4.24.0"):
        with pytest.raises(EnvChoiceError, match="LeanDojo#211"):
            choose_env("leandojo", refused)
    with pytest.raises(EnvChoiceError, match="v4.8.0-rc1"):
        choose_env("repl", "leanprover/lean4:v4.7.0")
    with pytest.raises(EnvChoiceError, match="lean-toolchain"):
        choose_env("auto", None)


def test_prove_sorries_on_the_repl(fake_lean, tmp_path, capsys):
    """Every sorry is attempted on the REPL (a nested one too); this file was never elaborated
    on its own in a transcript, so the REPL dies opening it: recorded, reported, run done."""
    from prover.cli import main
    project = fake_lean / "project"
    (project / "Demo.lean").write_text("theorem a (p : Prop) (h : p) : p := by\n  have q := h\n  sorry\n\n"
                                       "example : True := by sorry\n")
    gen = save_untrained_generator(tmp_path / "gen")
    out = tmp_path / "report"
    code = main(["prove-sorries", str(project), "--env", "repl", "--generator", str(gen), "--write",
                 "--out", str(out), "search.max_expansions=1", "generator.num_tactics=2",
                 f"env.repl.repl_path={fake_lean / 'repl'}", "env.repl.memory_gb=0.5"])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["env"] == "repl" and report["counts"] == {"proved": 0, "failed": 0, "error": 2, "skipped": 0}
    assert all(s["search"]["stop_reason"] == "env_start" for s in report["sorries"])
    assert "2 sorries: proved 0, failed 0, errors 2, skipped 0" in capsys.readouterr().out


def test_recheck_before_writing(tmp_path):
    """A file with its proofs in place must elaborate; the one proof that breaks it is left out."""
    from prover.sorries.check import CHECKED, REJECTED, recheck_files_in_repl
    from prover.sorries.find import find_sorries
    from prover.sorries.prove import SorryAttempt
    (tmp_path / "A.lean").write_text("theorem a : 1 = 1 := by sorry\ntheorem b : 2 = 2 := by sorry\n")
    found = find_sorries(tmp_path)
    attempts = [SorryAttempt(found[0], "proved", proof=["rfl"]), SorryAttempt(found[1], "proved", proof=["bad"])]

    def run_file(path):  # Lean's answer shape: an error where `bad` stands, else sorries left
        text = path.read_text()
        errors = [{"severity": "error", "data": "unknown tactic"}] if "bad" in text else []
        return {"env": 0, "messages": errors, "sorries": [{"goal": "g"}] * text.count("sorry")}

    printed = []

    def command(cmd, env=None, timeout=None):  # `#print axioms` in the file's environment (Lean's format)
        if is_query(cmd):  # and the query, answered as tests/lean_standin.py says
            return query_answer(cmd, [[["a"], []], [["b"], []]], [["propext"]])
        printed.append(cmd)
        return {"messages": [{"severity": "info", "data": f"'{cmd.split()[-1]}' depends on axioms: [propext]"}]}

    counts = recheck_files_in_repl(attempts, tmp_path, run_file, command, replay=lambda env: ("", env))
    assert counts == {CHECKED: 1, REJECTED: 1, "unchecked": 0}
    assert [a.check for a in attempts] == [CHECKED, REJECTED] and attempts[1].status == "error"
    assert printed[-1] == "#print axioms a"
    assert not list(tmp_path.glob(".prover-check-*"))


def test_recheck_before_writing_refuses_sorry_axioms_and_escaping_text(tmp_path):
    """The verifier's file check on the prove-sorries path: a proof whose declaration depends
    on sorryAx once no sorry is left, and a proof whose text leaves its `by` block (never
    sent to Lean), are not patched."""
    from prover.sorries.check import CHECKED, REJECTED, recheck_files_in_repl
    from prover.sorries.find import find_sorries
    from prover.sorries.prove import SorryAttempt
    (tmp_path / "A.lean").write_text("theorem a : 1 = 1 := by sorry\n")
    (tmp_path / "B.lean").write_text("theorem b : 2 = 2 := by sorry\n")
    found = find_sorries(tmp_path)
    attempts = [SorryAttempt(found[0], "proved", proof=["exact cheat"]),
                SorryAttempt(found[1], "proved", proof=["rfl\naxiom cheat : False"])]
    files = []

    def run_file(path):
        files.append(path.read_text())
        return {"env": 0, "messages": [], "sorries": [{"goal": "g"}] * path.read_text().count("sorry")}

    def command(cmd, env=None, timeout=None):
        if is_query(cmd):
            return query_answer(cmd, [[["a"], []], [["b"], []]], [["sorryAx"]])
        return {"messages": [{"severity": "info", "data": f"'{cmd.split()[-1]}' depends on axioms: [sorryAx]"}]}

    counts = recheck_files_in_repl(attempts, tmp_path, run_file, command, replay=lambda env: ("", env))
    assert counts == {CHECKED: 0, REJECTED: 2, "unchecked": 0}
    assert "command keyword `axiom`" in attempts[1].reason
    assert not any("axiom cheat" in f for f in files)
