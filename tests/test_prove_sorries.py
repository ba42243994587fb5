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
from types import SimpleNamespace

import pytest

from prover.cli import main
from prover.data.theorem import load_theorems
from prover.env.replay import ReplayConfig, ReplayEnv
from prover.search import components
from prover.search.best_first import SearchConfig
from prover.search.sources import NoPremises
from prover.sorries.find import find_sorries
from prover.sorries.prove import prove_sorries, sorry_theorem, write_report
from tests.conftest import REPO
from tests.fake_lean_dojo import FakeLean
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
                             SearchConfig(), progress=False)
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
                             OracleTactics(list(traced.values())), SearchConfig(),
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
                 "search.max_expansions=1", "generator.num_tactics=2"])
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


def _repo(tmp_path, sub: str = "") -> Path:
    """A committed git repository holding the fixture project (in `sub`, when given)."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo / sub if sub else repo)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "fixture")
    return repo


@pytest.fixture
def lean(traced, monkeypatch):
    """Fake Lean under the real adapter (LeanDojoEnv); the oracle proposes every proof but
    top_level's."""
    monkeypatch.setattr(components, "lean_toolchain_available", lambda: True)
    oracle = OracleTactics([t for n, t in traced.items() if n != "top_level"])
    monkeypatch.setattr(components, "generator_spec", lambda cfg: SimpleNamespace(build=lambda: oracle))
    return FakeLean.from_theorems(traced.values()).install(monkeypatch)


def _leandojo_args(project, out):
    return ["prove-sorries", str(project), "--env", "leandojo", "--out", str(out),
            "generator.num_tactics=16"]


def test_leandojo_run_drives_the_real_adapter_and_rechecks_each_proof(tmp_path, lean, capsys):
    repo = _repo(tmp_path)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()
    out = tmp_path / "out"
    assert main(_leandojo_args(repo, out)) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["counts"] == {"proved": 4, "failed": 1, "error": 0, "skipped": 10}
    # Each whole-proof sorry was opened by LeanDojo at the repository's HEAD, by its name.
    assert sorted(o[3] for o in lean.opened) == sorted([
        "SorryProject.add_zero'", "SorryProject.zero_add'", "SorryProject.by_newline",
        "SorryProject.Inner.nested_ns", "top_level"])
    assert {o[:3] for o in lean.opened} == {(str(repo.resolve()), head, BASIC)}
    assert lean.traces == [(str(repo.resolve()), head, True)]  # traced once, then the cache
    # Every proof found was re-checked in its file, as one proof term.
    assert sorted(lean.checks) == sorted([
        (BASIC, "SorryProject.add_zero'", "by simp"),
        (BASIC, "SorryProject.zero_add'", "by omega"),
        (BASIC, "SorryProject.by_newline", "by\n  have h := Nat.add_comm a b\n  exact h"),
        (BASIC, "SorryProject.Inner.nested_ns", "by\n  rw [Nat.mul_comm]\n  exact Nat.one_mul x")])
    assert report["check"] == ("re-checked with lean_dojo.check_proof: 4 accepted, 0 rejected "
                               "(not patched), 0 could not be checked (not patched)")
    assert {s["check"] for s in report["sorries"] if s["status"] == "proved"} == {"checked"}
    said = capsys.readouterr().out
    assert report["check"] in (out / "report.md").read_text() and report["check"] in said
    assert "GITHUB_ACCESS_TOKEN" in said and "DISABLE_REMOTE_CACHE" in said  # preflight lines


def test_a_proof_check_proof_rejects_is_an_error_and_not_patched(tmp_path, lean):
    lean.reject_checks = {"SorryProject.zero_add'"}
    out = tmp_path / "out"
    assert main(_leandojo_args(_repo(tmp_path), out)) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["counts"] == {"proved": 3, "failed": 1, "error": 1, "skipped": 10}
    (rejected,) = [s for s in report["sorries"] if s["check"] == "rejected"]
    assert rejected["name"] == "SorryProject.zero_add'" and "check_proof rejected" in rejected["reason"]
    patch = (out / "proofs.patch").read_text()
    assert "by simp" in patch and "by omega" not in patch


@pytest.mark.parametrize("change", ["edit SorryProject.lean", "new SorryProject/Extra.lean"])
def test_uncommitted_changes_anywhere_in_the_repository_are_refused(tmp_path, lean, capsys, change):
    """LeanDojo builds the commit: any change it would not see (an import of a patched file, a
    new file) makes its proofs say nothing about the working tree."""
    repo = _repo(tmp_path)
    what, rel = change.split()
    with open(repo / rel, "a") as f:
        f.write("\n-- changed\n")
    assert main(_leandojo_args(repo, tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert f"uncommitted changes in {rel}: lean-dojo traces the commit" in err
    assert lean.opened == [] and lean.traces == []


def test_a_project_in_a_subfolder_of_its_repository_is_refused_clearly(tmp_path, lean, capsys):
    repo = _repo(tmp_path, sub="lean")
    assert main(_leandojo_args(repo / "lean", tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert f"no lakefile.lean or lakefile.toml at the git root {repo.resolve()}" in err
    assert "make the project folder its own git repository" in err
    assert lean.opened == [] and lean.traces == []


def test_a_mathlib_project_fetches_mathlibs_cache_instead_of_building_it(tmp_path, lean, capsys):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    (repo / "lake-manifest.json").write_text(json.dumps(
        {"version": "1.1.0", "packages": [{"name": "mathlib", "type": "git", "rev": "abc"}]}))
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "fixture")
    assert main(_leandojo_args(repo, tmp_path / "out")) == 0
    # lean-dojo runs `lake exe cache get` when build_deps is False (trace.py _trace).
    assert {o[4] for o in lean.opened} == {False} and [t[2] for t in lean.traces] == [False]
    assert "lake exe cache get" in capsys.readouterr().out


def test_the_repository_is_traced_ahead_before_any_search(tmp_path, lean, capsys):
    """Tracing takes hours and cannot run inside a Ray worker: the driver traces first, with a
    line about time, and no Dojo opens before (issue 16, defect 2)."""
    repo = _repo(tmp_path)
    assert main(_leandojo_args(repo, tmp_path / "out")) == 0
    assert lean.events[0] == f"trace {repo.resolve()}" and lean.events[1].startswith("enter ")
    assert len(lean.traces) == 1
    said = capsys.readouterr().out
    assert "tracing 1 repository ahead" in said and "hours for one that depends on Mathlib" in said


def test_help_and_readme_state_the_preconditions_commands_and_time(capsys):
    with pytest.raises(SystemExit) as done:
        main(["prove-sorries", "--help"])
    assert done.value.code == 0
    said = " ".join(capsys.readouterr().out.split())
    readme = " ".join((REPO / "docs" / "search.md").read_text().split())  # the README links it
    for text in (said, readme):
        for needed in ("lakefile at the root of its git repository", "everything committed",
                       "git 2.25", "GITHUB_ACCESS_TOKEN", "DISABLE_REMOTE_CACHE", "lake exe cache get",
                       "prover prove-sorries PROJECT --env leandojo", "hours", "lean_dojo.check_proof"):
            assert needed in text, needed
