"""prove-sorries on tests/fixtures/lean_sorry_project, fed proofs by the replay environment.

tests/fixtures/lean_sorry_project_proofs.json holds hand-written traced proofs (LeanDojo record
layout, not Lean output) of the project's whole-proof sorry theorems. The replay env accepts
exactly those tactics; the oracle TEST DOUBLE proposes them, so the search finds them and the
test checks what matters here: which sorrys are attempted, and that each patch replaces exactly
its `sorry` and nothing else.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from prover.cli import main
from prover.data.theorem import load_theorems
from prover.env import leandojo_env
from prover.env.replay import ReplayConfig, ReplayEnv
from prover.search import components
from prover.search.best_first import SearchConfig
from prover.search.sources import NoPremises
from prover.sorries.find import find_sorries
from prover.sorries.prove import (git_repo, prove_sorries, sorry_theorem, uncommitted,
                                  write_report)
from tests.conftest import REPO
from tests.search_doubles import OracleTactics, save_untrained_generator

FIXTURE = REPO / "tests" / "fixtures" / "lean_sorry_project"
PROOFS = REPO / "tests" / "fixtures" / "lean_sorry_project_proofs.json"
BASIC = "SorryProject/Basic.lean"

# (what the file says, what it says once proved): each differs from the original only where
# the sorry token was.
EXPECTED = [
    ("theorem add_zero' (n : Nat) : n + 0 = n := by sorry",
     "theorem add_zero' (n : Nat) : n + 0 = n := by simp"),
    ("theorem zero_add' (n : Nat) : 0 + n = n := sorry",
     "theorem zero_add' (n : Nat) : 0 + n = n := by omega"),
    ("lemma by_newline (a b : Nat) : a + b = b + a := by\n  sorry\n",
     "lemma by_newline (a b : Nat) : a + b = b + a := by\n  have h := Nat.add_comm a b\n  exact h\n"),
    ("theorem nested_ns (x : Nat) : x * 1 = x :=\n  sorry\n",
     "theorem nested_ns (x : Nat) : x * 1 = x :=\n  by rw [Nat.mul_comm]\n     exact Nat.one_mul x\n"),
]


@pytest.fixture
def project(tmp_path) -> Path:
    dst = tmp_path / "lean_sorry_project"
    shutil.copytree(FIXTURE, dst)
    return dst


@pytest.fixture(scope="module")
def traced():
    return {t.full_name: t for t in load_theorems(PROOFS)}


def _env_factory(traced, config=None):
    return lambda s: ReplayEnv(traced.get(s.name) or sorry_theorem(s, "", ""), config)


def _expected_basic() -> bytes:
    text = (FIXTURE / BASIC).read_bytes().decode("utf-8")
    for before, after in EXPECTED:
        assert text.count(before) == 1
        text = text.replace(before, after)
    return text.encode("utf-8")


def test_proofs_become_minimal_patches(project, traced, tmp_path):
    sorries = find_sorries(project)
    # The generator stand-in knows every proof but top_level's: that one is searched and fails.
    oracle = OracleTactics([t for n, t in traced.items() if n != "top_level"])
    attempts = prove_sorries(sorries, _env_factory(traced), NoPremises(), oracle,
                             SearchConfig(num_tactics=16), progress=False)
    status = {a.sorry.label: a.status for a in attempts if a.status != "skipped"}
    assert status == {"SorryProject.add_zero'": "proved", "SorryProject.zero_add'": "proved",
                      "SorryProject.by_newline": "proved", "SorryProject.Inner.nested_ns": "proved",
                      "top_level": "failed"}
    skipped = [a for a in attempts if a.status == "skipped"]
    assert len(skipped) == 10  # 9 sorrys inside longer proofs, and 1 example
    assert sum("example" in a.reason for a in skipped) == 1
    assert all("whole proof" in a.reason for a in skipped if a.sorry.name)

    out = tmp_path / "out"
    report = write_report(project, attempts, out, "replay", write_files=True)
    assert report["counts"] == {"proved": 4, "failed": 1, "error": 0, "skipped": 10}
    assert report["env_label"].startswith("env: replay")
    # The patched copy differs from the original exactly at the four sorrys.
    assert (out / "patched" / BASIC).read_bytes() == _expected_basic()
    assert not (out / "patched" / "SorryProject" / "Algebra.lean").exists()
    for f in (BASIC, "SorryProject/Algebra.lean", "SorryProject.lean"):
        assert (project / f).read_bytes() == (FIXTURE / f).read_bytes()  # sources untouched
    patch = (out / "proofs.patch").read_text()
    removed = [ln for ln in patch.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert len(removed) == 4 and all("sorry" in ln for ln in removed)
    assert len(added) == 6 and not any("sorry" in ln for ln in added)
    # It applies to a clean copy with git and gives the same file.
    clean = tmp_path / "clean"
    shutil.copytree(FIXTURE, clean)
    subprocess.run(["git", "apply", str(out / "proofs.patch")], cwd=clean, check=True)
    assert (clean / BASIC).read_bytes() == _expected_basic()
    saved = json.loads((out / "report.json").read_text())
    assert [s["status"] for s in saved["sorries"]].count("proved") == 4
    md = (out / "report.md").read_text()
    assert "proved 4, failed 1, errors 0, skipped 10" in md and "env: replay" in md


def test_env_crashes_and_missing_traces_are_errors(project, traced, tmp_path):
    known = {n: t for n, t in traced.items() if n != "SorryProject.by_newline"}
    config = ReplayConfig(crash_theorems=["SorryProject.zero_add'"])
    attempts = prove_sorries(find_sorries(project), _env_factory(known, config), NoPremises(),
                             OracleTactics(list(traced.values())), SearchConfig(num_tactics=16),
                             progress=False)
    by_name = {a.sorry.label: a for a in attempts}
    assert by_name["SorryProject.zero_add'"].status == "error"
    assert "simulated crash of SorryProject.zero_add'" in by_name["SorryProject.zero_add'"].reason
    assert by_name["SorryProject.by_newline"].status == "error"
    assert "has no traced tactics" in by_name["SorryProject.by_newline"].reason
    report = write_report(project, attempts, tmp_path / "out", "replay", write_files=False)
    assert report["counts"] == {"proved": 3, "failed": 0, "error": 2, "skipped": 10}
    assert not (tmp_path / "out" / "patched").exists()
    patch = (tmp_path / "out" / "proofs.patch").read_text()
    assert "by simp" in patch and "by omega" not in patch and "have h" not in patch


def test_cli_with_a_generator(project, tmp_path, capsys):
    model = save_untrained_generator(tmp_path / "gen")
    out = tmp_path / "out"
    code = main(["prove-sorries", str(project), "--env", "replay", "--replay-traces", str(PROOFS),
                 "--generator", str(model), "--out", str(out), "--write",
                 "search.max_expansions=1", "search.num_tactics=2"])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    c = report["counts"]
    assert c["skipped"] == 10 and c["proved"] + c["failed"] + c["error"] == 5
    assert all(s["search"]["expansions"] <= 1 for s in report["sorries"] if s["search"])
    assert (out / "proofs.patch").exists() == (c["proved"] > 0)
    assert "sorries: proved" in capsys.readouterr().out
    assert main(["prove-sorries", str(project), "--env", "replay", "--generator", str(model)]) == 2
    assert "--replay-traces" in capsys.readouterr().err


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_leandojo_opens_each_sorry_at_the_repos_commit(tmp_path, traced, monkeypatch, capsys):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo / "lean")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "fixture")
    top, commit = git_repo(repo / "lean")
    assert top == repo.resolve() and len(commit) == 40
    opened = []

    class RecordingEnv(ReplayEnv):  # stands in for LeanDojoEnv: records what Lean would open
        def __init__(self, theorem, config=None):
            opened.append(theorem)
            super().__init__(traced.get(theorem.full_name) or theorem)

    monkeypatch.setattr(components, "lean_toolchain_available", lambda: True)
    monkeypatch.setattr(leandojo_env, "LeanDojoEnv", RecordingEnv)
    model = save_untrained_generator(tmp_path / "gen")
    args = ["prove-sorries", str(repo / "lean"), "--env", "leandojo", "--generator", str(model),
            "--out", str(tmp_path / "out"), "search.max_expansions=1", "search.num_tactics=2"]
    assert main(args) == 0
    assert sorted(t.full_name for t in opened) == sorted([
        "SorryProject.add_zero'", "SorryProject.zero_add'", "SorryProject.by_newline",
        "SorryProject.Inner.nested_ns", "top_level"])
    assert {(t.url, t.commit) for t in opened} == {(str(repo.resolve()), commit)}
    assert {t.file_path for t in opened} == {"lean/" + BASIC}  # relative to the repository root
    # LeanDojo reads the commit: uncommitted edits to a file with sorrys are refused.
    with open(repo / "lean" / BASIC, "a") as f:
        f.write("\n")
    assert uncommitted(top, [repo / "lean" / BASIC]) == ["lean/" + BASIC]
    capsys.readouterr()
    assert main(args) == 2
    assert "uncommitted changes in lean/SorryProject/Basic.lean" in capsys.readouterr().err
