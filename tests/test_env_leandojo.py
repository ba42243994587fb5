"""LeanDojoEnv against lean-dojo's own result classes and a scripted stand-in for `Dojo`.

No Lean here: `lean_dojo.Dojo` is replaced by `FakeDojo`, which answers with real
`TacticState` / `ProofFinished` / `LeanError` / `ProofGivenUp` objects and raises lean-dojo's
real `DojoCrashError` / `DojoTacticTimeoutError` / `DojoInitError`. Like a real REPL process,
a FakeDojo only accepts states it issued itself, so a restart must rebuild states.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import lean_dojo
import pytest

from prover.env.base import (EnvCrash, EnvInitError, GivenUp, ProofFinished, State, TacticError,
                             Timeout)
from prover.env.leandojo_env import LeanDojoConfig, LeanDojoEnv, lean_toolchain_available
from prover.search.best_first import ERROR, SearchConfig, best_first_search
from prover.search.sources import NoPremises, Suggested

def finished(result) -> str | None:
    """A ProofFinished's message, with the one verdict's word for a Dojo proof checked."""
    assert isinstance(result, ProofFinished) and result.check["checks"] == ["text", "lean"]
    return result.message


REPO = Path(__file__).resolve().parents[1]
S0 = "n : Nat\n⊢ n + 0 = n"
S1 = "n : Nat\n⊢ n = n"
S2 = "case a\nn : Nat\n⊢ True\n\ncase b\nn : Nat\n⊢ True"


@dataclass
class Script:
    """What the fake Lean does. `crashes` / `enter_crashes`: how many more times a tactic
    (or opening) crashes before it works."""

    init_pp: str = S0
    crashes: dict[str, int] = field(default_factory=dict)
    enter_crashes: int = 0
    enter_error: str | None = None
    # A non-Dojo exception real lean-dojo raises while opening (an assert, bad JSON, `lake
    # build` failing, the GitHub API unreachable); raised by __enter__ when set.
    enter_raises: BaseException | None = None
    entered: int = 0
    exited: int = 0
    calls: list[tuple[int, str, str]] = field(default_factory=list)  # (process, state pp, tactic)
    now: float = 0.0  # fake seconds: a timeout comes only after the REPL's timeout has passed
    dojo_args: list[dict] = field(default_factory=list)


def _answer(script: Script, state: lean_dojo.TacticState, tactic: str, next_sid: int):
    if script.crashes.get(tactic, 0) > 0:
        script.crashes[tactic] -= 1
        raise lean_dojo.DojoCrashError("Unexpected EOF")
    if tactic == "simp" and state.pp == S0:
        return lean_dojo.TacticState(S1, next_sid, "simp made progress")
    if tactic == "constructor" and state.pp == S1:
        return lean_dojo.TacticState(S2, next_sid)
    if tactic in ("rfl", "boom", "flaky") and state.pp in (S1, S2):
        return lean_dojo.ProofFinished(next_sid, "goals accomplished")
    if tactic == "exact?":
        return lean_dojo.ProofGivenUp()
    if tactic == "slow":
        raise lean_dojo.DojoTacticTimeoutError()
    if tactic == "odd":  # Lean printed a goal lean-dojo cannot parse: the real TacticState asserts
        return lean_dojo.TacticState("n : Nat\n⊢ a ⊢ b", next_sid)
    return lean_dojo.LeanError(f"unknown tactic '{tactic}'")


@pytest.fixture
def script(monkeypatch) -> Script:
    script = Script()
    processes = []

    class FakeRepo:
        def __init__(self, url: str, commit: str) -> None:
            self.url, self.commit = url, commit

    class FakeDojo:
        def __init__(self, entry, timeout=600, additional_imports=(), build_deps=True):
            script.dojo_args.append({"entry": entry, "timeout": timeout,
                                     "additional_imports": list(additional_imports),
                                     "build_deps": build_deps})
            self.timeout = timeout
            self.issued: set[int] = set()
            self.process = len(processes)
            processes.append(self)

        def __enter__(self):
            script.entered += 1
            if script.enter_raises is not None:
                raise script.enter_raises
            if script.enter_error:
                raise lean_dojo.DojoInitError(script.enter_error)
            if script.enter_crashes > 0:
                script.enter_crashes -= 1
                raise lean_dojo.DojoCrashError("Unexpected exit code: 1")
            # The real Dojo spawns its REPL (pexpect, Dojo's timeout) only once opening worked.
            self.proc = SimpleNamespace(timeout=self.timeout)
            return self, self._issue(lean_dojo.TacticState(script.init_pp, 0))

        def __exit__(self, *exc):
            script.exited += 1
            # The real __exit__ kills `self.proc`: after a failed __enter__ it raises AttributeError.
            self.proc.__class__

        def _issue(self, result):
            if isinstance(result, lean_dojo.TacticState):
                self.issued.add(result.id)
            return result

        def run_tac(self, state, tactic):
            # A real REPL knows only the state ids of its own process.
            assert isinstance(state, lean_dojo.TacticState) and state.id in self.issued, \
                "state from another Dojo process"
            script.calls.append((self.process, state.pp, tactic))
            if tactic == "slow":  # pexpect gives up only after proc.timeout seconds, as the real one
                script.now += self.proc.timeout
            return self._issue(_answer(script, state, tactic, max(self.issued) + 1))

    monkeypatch.setattr(lean_dojo, "Dojo", FakeDojo)
    monkeypatch.setattr(lean_dojo, "LeanGitRepo", FakeRepo)
    return script


THM = lean_dojo.Theorem  # the real one: our env must build it from the record's fields


@dataclass(frozen=True)
class Ref:
    url: str = "https://github.com/example/proj"
    commit: str = "0123abc"
    file_path: str = "Proj/Basic.lean"
    full_name: str = "Proj.add_zero'"


def test_entry_is_leandojo_theorem_of_the_record(script):
    with LeanDojoEnv(Ref(), LeanDojoConfig(timeout=42, startup_timeout=420,
                                           additional_imports=["Mathlib"])) as env:
        assert env.name == "leandojo"
        assert env.initial_state == State(S0, 0)
    (args,) = script.dojo_args
    entry = args["entry"]
    assert isinstance(entry, THM)
    assert (entry.repo.url, entry.repo.commit) == ("https://github.com/example/proj", "0123abc")
    assert entry.file_path == Path("Proj/Basic.lean") and entry.full_name == "Proj.add_zero'"
    assert args["timeout"] == 420 and args["additional_imports"] == ["Mathlib"]
    assert (script.entered, script.exited) == (1, 1)


def test_results_map_to_our_types(script):
    with LeanDojoEnv(Ref()) as env:
        s0 = env.initial_state
        s1 = env.run_tactic(s0, "simp")
        assert s1 == State(S1, 1)
        assert finished(env.run_tactic(s1, "rfl")) == "goals accomplished"
        assert env.run_tactic(s0, "nlinarith") == TacticError("unknown tactic 'nlinarith'")
        assert env.run_tactic(s0, "exact?") == GivenUp()
        s2 = env.run_tactic(s1, "constructor")
        assert s2 == State(S2, 2)
    assert env.failures == [] and env.restarts == 0


def test_sorry_and_admit_give_up_without_asking_lean(script):
    with LeanDojoEnv(Ref()) as env:
        assert env.run_tactic(env.initial_state, "exact sorry") == GivenUp()
        assert env.run_tactic(env.initial_state, "admit") == GivenUp()
        assert env.run_tactic(env.initial_state, "exact h_admit") == TacticError(
            "unknown tactic 'exact h_admit'")
    assert [c[2] for c in script.calls] == ["exact h_admit"]


def test_a_tactic_with_a_command_keyword_is_refused_without_asking_lean(script):
    """The verifier's text check (prover.env.verify) on the Dojo path too: text that would end
    the proof and declare an axiom is a failed tactic, never sent."""
    with LeanDojoEnv(Ref()) as env:
        out = env.run_tactic(env.initial_state, "simp\naxiom cheat : False")
        assert isinstance(out, TacticError) and "command keyword `axiom`" in out.message
    assert script.calls == []


def test_crash_restarts_the_dojo_and_rebuilds_the_state(script):
    script.crashes["boom"] = 1
    with LeanDojoEnv(Ref()) as env:
        s1 = env.run_tactic(env.initial_state, "simp")
        s2 = env.run_tactic(s1, "constructor")
        assert finished(env.run_tactic(s2, "boom")) == "goals accomplished"
        assert env.restarts == 1 and script.entered == 2
        (failure,) = env.failures
        assert (failure.kind, failure.tactic, failure.recovered) == ("crash", "boom", True)
        assert "Unexpected EOF" in failure.message
        # Process 1 replayed the path to s2, then ran the tactic that had crashed process 0.
        assert script.calls[-3:] == [(1, S0, "simp"), (1, S1, "constructor"), (1, S2, "boom")]
        # Older states stay usable in the new process.
        assert finished(env.run_tactic(s1, "rfl")) == "goals accomplished"
    assert script.exited == 2


def test_repeated_crash_raises_envcrash_and_the_env_stays_dead(script):
    script.crashes["boom"] = 10
    env = LeanDojoEnv(Ref(), LeanDojoConfig(max_restarts=2))
    with env:
        s1 = env.run_tactic(env.initial_state, "simp")
        with pytest.raises(EnvCrash, match="crashed 3 times running 'boom': Unexpected EOF"):
            env.run_tactic(s1, "boom")
        assert [f.recovered for f in env.failures] == [True, True, False]
        with pytest.raises(EnvCrash):
            env.run_tactic(s1, "rfl")
    assert script.crashes["boom"] == 7 and script.entered == 3
    assert script.exited == 3  # every process started was cleaned up


def test_no_restart_when_max_restarts_is_zero(script):
    script.crashes["boom"] = 1
    with LeanDojoEnv(Ref(), LeanDojoConfig(max_restarts=0)) as env:
        with pytest.raises(EnvCrash):
            env.run_tactic(env.initial_state, "boom")
    assert script.entered == 1 and env.restarts == 0


def test_timeout_is_a_result_and_the_next_tactic_runs_in_a_fresh_dojo(script):
    with LeanDojoEnv(Ref(), LeanDojoConfig(timeout=7)) as env:
        s1 = env.run_tactic(env.initial_state, "simp")
        assert env.run_tactic(s1, "slow") == Timeout("tactic exceeded 7s")
        assert script.entered == 1
        assert finished(env.run_tactic(s1, "rfl")) == "goals accomplished"
        assert script.entered == 2 and env.restarts == 1
        assert [(f.kind, f.tactic) for f in env.failures] == [("timeout", "slow")]
        assert script.calls[-2:] == [(1, S0, "simp"), (1, S1, "rfl")]


def test_init_error_is_envinit_error(script):
    script.enter_error = "Failed to locate the theorem"
    env = LeanDojoEnv(Ref())
    with pytest.raises(EnvInitError, match="Failed to locate the theorem"):
        env.open()
    assert isinstance(EnvInitError("x"), EnvCrash)
    assert [f.kind for f in env.failures] == ["init"]
    assert script.exited == 1


def test_unresolvable_repo_is_envinit_error(script, monkeypatch):
    def bad_repo(url, commit):
        raise ValueError(f"{url} is not a valid URL")

    monkeypatch.setattr(lean_dojo, "LeanGitRepo", bad_repo)
    env = LeanDojoEnv(Ref(url="nowhere"))
    with pytest.raises(EnvInitError, match="cannot resolve Proj.add_zero' in nowhere@0123abc: "
                                           "ValueError: nowhere is not a valid URL"):
        env.open()
    assert script.entered == 0 and [f.kind for f in env.failures] == ["init"]


def test_restart_on_a_different_initial_state_is_a_crash(script):
    script.crashes["boom"] = 1
    with LeanDojoEnv(Ref()) as env:
        s1 = env.run_tactic(env.initial_state, "simp")
        script.init_pp = "m : Nat\n⊢ m = m"  # the file changed under us
        with pytest.raises(EnvCrash, match="different initial state"):
            env.run_tactic(s1, "boom")
    assert [f.message for f in env.failures] == [
        "Unexpected EOF", "the restarted Dojo opened on a different initial state"]


def test_crash_while_opening_is_retried(script):
    script.enter_crashes = 1
    with LeanDojoEnv(Ref()) as env:
        assert env.initial_state.text == S0
    assert script.entered == 2
    assert [(f.kind, f.recovered) for f in env.failures] == [("crash", True)]


def test_crash_while_opening_every_time_raises(script):
    script.enter_crashes = 5
    env = LeanDojoEnv(Ref(), LeanDojoConfig(max_restarts=1))
    with pytest.raises(EnvCrash, match="crashed 2 times while opening"):
        env.open()
    assert script.entered == 2


def test_closed_env_and_foreign_states_are_refused(script):
    env = LeanDojoEnv(Ref())
    with pytest.raises(RuntimeError, match="not open"):
        env.run_tactic(State(S0, 0), "simp")
    with env:
        with pytest.raises(ValueError, match="state 5 was not made by this env"):
            env.run_tactic(State(S0, 5), "simp")


def test_module_imports_without_lean_dojo():
    code = ("import sys, prover.env.leandojo_env, prover.env.replay; "
            "sys.exit(1 if 'lean_dojo' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


def _fake_bin(folder: Path, *names: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        exe = folder / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def test_lean_toolchain_available(tmp_path):
    assert lean_toolchain_available(path=_fake_bin(tmp_path / "none")) is False
    assert lean_toolchain_available(path=_fake_bin(tmp_path / "lakeonly", "lake")) is False
    assert lean_toolchain_available(path=_fake_bin(tmp_path / "both", "lake", "lean")) is True
    # elan on PATH through a link, its proxies beside the real binary only.
    elan_dir = Path(_fake_bin(tmp_path / "elan" / "bin", "elan", "lake", "lean"))
    links = tmp_path / "links"
    links.mkdir()
    (links / "elan").symlink_to(elan_dir / "elan")
    assert lean_toolchain_available(path=str(links)) is True
    (elan_dir / "lean").unlink()
    assert lean_toolchain_available(path=str(links)) is False


# -- exceptions that are not Dojo's (defect 1 of issue 16) ---------------------------------

NON_DOJO_ERRORS = [
    AssertionError("Unable to find Lean4Repl.lean in the traced repo"),
    json.JSONDecodeError("Expecting value", "garbage", 0),
    subprocess.CalledProcessError(1, "lake build"),
    urllib.error.URLError("no route to api.github.com"),
]


@pytest.mark.parametrize("error", NON_DOJO_ERRORS, ids=lambda e: type(e).__name__)
def test_non_dojo_exceptions_while_opening_are_init_failures(script, error):
    script.enter_raises = error
    env = LeanDojoEnv(Ref())
    with pytest.raises(EnvInitError) as caught:
        env.open()
    assert caught.value.message.startswith(f"leandojo: cannot open Proj.add_zero': {type(error).__name__}")
    assert [(f.kind, f.recovered) for f in env.failures] == [("init", False)]
    assert script.exited == 1  # the half-started Dojo was left, although its __exit__ raised


class _Tactics:
    """Proposes the same tactics for every state."""

    def __init__(self, tactics):
        self.tactics = tactics

    def suggest(self, requests):
        return [[Suggested(t, -float(i)) for i, t in enumerate(self.tactics)] for _ in requests]


@pytest.mark.parametrize("error", NON_DOJO_ERRORS, ids=lambda e: type(e).__name__)
def test_search_records_an_init_failure_and_returns(script, error):
    script.enter_raises = error
    result = best_first_search(LeanDojoEnv(Ref()), NoPremises(), _Tactics(["simp"]),
                               SearchConfig(max_expansions=2))
    assert (result.status, result.stop_reason, result.env_started) == (ERROR, "env_start", False)
    assert type(error).__name__ in result.error
    assert [f["kind"] for f in result.env_failures] == ["init"]


def test_unparsable_state_is_a_recorded_failure_and_the_search_goes_on(script):
    result = best_first_search(LeanDojoEnv(Ref()), NoPremises(), _Tactics(["odd", "simp", "rfl"]),
                               SearchConfig(max_expansions=3))
    assert result.status == "proved" and result.proof == ["simp", "rfl"]
    assert result.tree.outcomes["error"] >= 1
    # "odd" was tried at both expanded states; each time the REPL stayed in use (no restart).
    assert [(f["kind"], f["tactic"], f["recovered"]) for f in result.env_failures] == [
        ("error", "odd", True)] * 2
    assert all(f["message"].startswith("lean-dojo raised AssertionError") for f in result.env_failures)
    assert script.entered == 1


def test_start_up_has_its_own_limit_apart_from_the_tactic_timeout(script):
    # Dojo's `timeout` bounds the wait for Lean to reach the theorem; tactics get their own.
    with LeanDojoEnv(Ref(), LeanDojoConfig(timeout=7, startup_timeout=900)) as env:
        assert script.dojo_args[0]["timeout"] == 900
        assert env._dojo.proc.timeout == 7  # what pexpect waits for each tactic's answer
        assert env.run_tactic(env.initial_state, "simp") == State(S1, 1)
    assert LeanDojoConfig().startup_timeout >= LeanDojoConfig().timeout


def test_tactic_timeout_and_search_budget_are_separate_settings():
    from prover.search.settings import SearchBenchmarkConfig
    cfg = SearchBenchmarkConfig()
    # One slow tactic must not be allowed the whole theorem's budget.
    assert cfg.env.leandojo.timeout < cfg.search.timeout_s


def test_lean_dojo_is_pinned_to_the_version_the_adapter_was_read_against():
    import tomllib
    from importlib.metadata import version
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if d.replace("_", "-").startswith("lean-dojo")]
    assert pin.replace(" ", "") == "lean-dojo==4.20.0"
    assert version("lean-dojo") == "4.20.0"  # what these tests ran against


def test_a_late_timeout_spends_the_search_budget_and_the_expansion_stops(script):
    # Each "slow" costs the per-tactic timeout (7 s) before Lean's answer is given up on; the
    # search budget (10 s) is checked before every tactic, so the second one is never started.
    result = best_first_search(LeanDojoEnv(Ref(), LeanDojoConfig(timeout=7)), NoPremises(),
                               _Tactics(["slow", "simp", "rfl"]), SearchConfig(timeout_s=10.0),
                               clock=lambda: script.now)
    assert (result.status, result.stop_reason) == ("failed", "timeout")
    assert result.tree.tactics_tried == 4 and script.now == 14.0  # slow, simp, rfl; then slow on S1
    assert [(f["kind"], f["message"]) for f in result.env_failures] == [("timeout", "tactic exceeded 7s")] * 2
