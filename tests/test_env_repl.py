"""ReplEnv on lean-interact's real process path, answered by the real Lean REPL's own transcripts.

A fake `lake` (tests/fake_repl/lake) is first on PATH: lean-interact starts `lake env
<repl>/.lake/build/bin/repl` as it would with Lean, and gets the transcript replayer
(tests/fake_repl/replay_repl.py), which answers only with what Lean answered to the same
request on the same state. Process start, JSON framing, timeouts and restarts are
lean-interact's own code; a request no transcript recorded makes the REPL exit (a crash).

Every test that uses the `lean_repl` fixture runs twice: on the upstream REPL's transcripts
(`lean-repl/<toolchain>/`) and on those of the fork that lean-interact builds
(`lean-repl/fork-v1.3.18/<toolchain>/`, whose answers carry `proofStatus`). The three requests
no transcript has (the heartbeat wrapper, the verifier's re-check under a fresh name, and
`#print axioms`) are answered by the rules stated in tests/fake_repl/replay_repl.py; the
axioms are the test's choice (`axioms=`), never Lean's.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from prover.data.state import parse_state, render_state
from prover.env.base import EnvCrash, GivenUp, ProofFinished, State, TacticError, Timeout
from prover.env.repl_env import ReplEnv, ReplTarget, goals_text, target_from_source
from prover.env.repl_session import InsufficientMemory, ReplConfig, ReplSession, memory_check
from prover.env.lean_query import is_query
from prover.env.verify import fresh_name
from prover.search.best_first import SearchConfig, best_first_search
from prover.search.sources import NoPremises
from tests.conftest import REPO
from tests.search_doubles import ScriptedTactics

FAKE_BIN = REPO / "tests" / "fake_repl"


DIALECTS = {"upstream": "", "fork": "fork-v1.3.18/"}


@pytest.fixture(params=sorted(DIALECTS))
def dialect(request) -> str:
    return request.param


@pytest.fixture
def lean_repl(data_root, tmp_path, monkeypatch, dialect):
    """`make(version, transcripts, axioms=None, **settings)`: a ReplConfig whose REPL replays
    those transcripts (names relative to lean-repl/[fork-v1.3.18/]<version>/test/, by the
    `dialect` this test runs on); `axioms`: what `#print axioms` of a re-checked proof lists
    (as printed); `lean_axioms`: the same as the query's components (default: `axioms` cut at
    dots); `added`: constants the proof added, with flags; `kernel`: whether the kernel replay
    accepts ("accept") or throws ("reject"); `revision`: the REPL checkout's commit (default:
    the transcripts')."""
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}")
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("FAKE_REPL_LOG", str(log))

    def make(version: str, transcripts: list[str], axioms: list[str] | None = None,
             kernel: str = "accept", revision: str | None = None, lean_axioms: list | None = None,
             added: list | None = None, **settings) -> ReplConfig:
        base = data_root / "lean-repl" / f"{DIALECTS[dialect]}{version}"
        if axioms is not None:
            monkeypatch.setenv("FAKE_REPL_AXIOMS", json.dumps(axioms, ensure_ascii=False))
        if lean_axioms is not None:
            monkeypatch.setenv("FAKE_REPL_LEAN_AXIOMS", json.dumps(lean_axioms, ensure_ascii=False))
        if added is not None:
            monkeypatch.setenv("FAKE_REPL_ADDED", json.dumps(added, ensure_ascii=False))
        monkeypatch.setenv("FAKE_REPL_KERNEL", kernel)
        paths = [str(base / "test" / f"{name}.in") for name in transcripts]
        monkeypatch.setenv("FAKE_REPL_TRANSCRIPTS", os.pathsep.join(paths))
        for folder in ("project", "repl"):
            (tmp_path / folder).mkdir(exist_ok=True)
            (tmp_path / folder / "lean-toolchain").write_text((base / "lean-toolchain").read_text())
        # The REPL checkout's revision, as lean-interact records it when it copies one: the
        # commit the transcripts were recorded at (prover.env.repl_revision reads it).
        (tmp_path / "repl" / ".last_synced_commit").write_text(revision or (base / "COMMIT").read_text())
        return ReplConfig(project=str(tmp_path / "project"), repl_path=str(tmp_path / "repl"), **settings)

    make.log = log
    make.dialect = dialect
    return make


def requests_sent(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


COMPLEX_AND = "theorem complex_and (p q r : Prop) (h1 : p ∧ q) (h2 : q → r) : p ∧ r"
TRACE_SIMP_HEADER = ("def f := 37", "@[simp] theorem f_def : f = 37 := by rfl",
                     "set_option trace.Meta.Tactic.simp true")


def test_states_have_leandojo_shape(lean_repl):
    """Goals apart by a blank line with their case tags: what LeanDojo's state_before holds."""
    session = ReplSession(lean_repl("v4.24.0", ["proof_branching"]))
    with ReplEnv(ReplTarget("complex_and", statement=COMPLEX_AND), session) as env:
        root = env.initial_state
        assert root.text == "p q r : Prop\nh1 : p ∧ q\nh2 : q → r\n⊢ p ∧ r"
        two = env.run_tactic(root, "apply And.intro")
        assert isinstance(two, State)
        cases = parse_state(two.text)
        assert [c.tag for c in cases] == ["left", "right"] and [c.goal for c in cases] == ["p", "r"]
        assert render_state(cases) == two.text  # the same text our data pipeline renders
        one = env.run_tactic(two, "exact h1.left")
        assert one.text == "case right\np q r : Prop\nh1 : p ∧ q\nh2 : q → r\n⊢ r"
    session.close()


def test_repl_at_v4_10_with_mathlib(lean_repl):
    """LeanDojo Benchmark 4's toolchain, Mathlib imported: the upstream REPL sends no
    proofStatus there, the fork does."""
    session = ReplSession(lean_repl("v4.10.0-rc1", ["Mathlib/test/induction", "Mathlib/test/exact"]))
    with ReplEnv(ReplTarget("foo", "import Mathlib", "theorem foo (x : Nat) : x = x"), session) as env:
        cases = env.run_tactic(env.initial_state, "induction x")
        assert [c.tag for c in parse_state(cases.text)] == ["zero", "succ"]
        assert "\n\ncase succ\n" in cases.text
    with ReplEnv(ReplTarget("test", "import Mathlib", "theorem test : 3 = 7"), session) as env:
        failed = env.run_tactic(env.initial_state, "exact?")
        assert isinstance(failed, TacticError) and "could not close the goal" in failed.message
    sent = requests_sent(lean_repl.log)
    assert sum(r.get("cmd") == "import Mathlib" for r in sent) == 1  # the header, once per REPL
    session.close()


def test_candidate_counts_after_the_full_check(lean_repl):
    """A proof that completes and passes the full check: the asked statement re-proved under a
    fresh name in the header's environment, then its axioms printed there."""
    session = ReplSession(lean_repl("v4.24.0", ["trace_simp"], axioms=["propext"]))
    target = ReplTarget("ex", TRACE_SIMP_HEADER, "example : f = 37")
    with ReplEnv(target, session) as env:
        same = env.run_tactic(env.initial_state, 'trace "37"')
        assert isinstance(same, State) and same.text == "⊢ f = 37"
        done = env.run_tactic(env.initial_state, "simp")
        assert isinstance(done, ProofFinished)
    fresh = fresh_name("example : f = 37")
    assert done.check == {"status": "proved", "ok": True, "reason": None, "axioms": ["propext"],
                          "native_decide_allowed": False, "name": fresh,
                          "checks": ["text", "lean", "kernel", "added", "axioms"], "guarantee": "kernel replay"}
    sent = requests_sent(lean_repl.log)
    recheck = sent.index({"cmd": f"theorem {fresh} : f = 37 := by simp", "env": 2})  # the header's env
    checked_env = 4  # what the re-check answered (ids count up from the transcript's own)
    sent = sent[recheck + 1:]
    queries = [r for r in sent if "cmd" in r and is_query(r["cmd"])]
    # Lean asked, as JSON: the checked environment (its attributes), the kernel's replay of it
    # (the constants and the fresh name's axioms), the header's (the constants not the proof's)
    pickled = next(r for r in sent if "pickleTo" in r)
    unpickled = next(r for r in sent if "unpickleEnvFrom" in r)
    assert pickled["env"] == checked_env and pickled["pickleTo"] == unpickled["unpickleEnvFrom"]
    assert [q["env"] for q in queries][0] == checked_env and queries[-1]["env"] == 2
    assert "prover_check_" in queries[1]["cmd"] and queries[1]["env"] > checked_env
    assert sent[-1] == {"cmd": f"#print axioms {fresh}", "env": queries[1]["env"]}  # the second opinion
    session.close()


@pytest.mark.parametrize("axioms, allow, reason", [
    (["propext", "sorryAx"], False, "the proof depends on sorryAx"),
    (["Lean.ofReduceBool"], False, "the proof depends on Lean.ofReduceBool (native_decide): not allowed "
                                   "(env.repl.allow_native_decide=false)"),
    (["Lean.ofReduceBool", "Lean.trustCompiler"], True, None),
    (["propext", "cheat"], False, "the proof depends on axioms beyond Lean's standard ones: cheat"),
])
def test_axioms_decide_a_proof_lean_compiled(lean_repl, axioms, allow, reason):
    """Lean compiled the proof, and its axioms still decide: sorryAx, an axiom of its own, and
    native_decide's unless allowed; the result says which setting was in force."""
    session = ReplSession(lean_repl("v4.24.0", ["trace_simp"], axioms=axioms, allow_native_decide=allow))
    with ReplEnv(ReplTarget("ex", TRACE_SIMP_HEADER, "example : f = 37"), session) as env:
        out = env.run_tactic(env.initial_state, "simp")
    if reason is None:
        assert isinstance(out, ProofFinished) and out.check["native_decide_allowed"] is True
        assert out.check["axioms"] == axioms
    else:
        assert out == TacticError(f"the REPL closed every goal, but the proof does not pass the check: {reason}")
        assert [f.kind for f in env.failures] == ["rejected"]
    session.close()


def test_the_kernel_replay_rejecting_is_a_failed_tactic_and_search_goes_on(lean_repl):
    """Lean compiled the proof and listed no axioms, but the kernel's replay of what the check
    added throws (here the test's choice): the REPL process ends, as the real one does, the
    candidate is a failed tactic, and the next tactic runs in a restarted REPL. A tactic that
    sets an option skipping the kernel never reaches Lean."""
    session = ReplSession(lean_repl("v4.24.0", ["trace_simp"], axioms=[], kernel="reject"))
    with ReplEnv(ReplTarget("ex", TRACE_SIMP_HEADER, "example : f = 37"), session) as env:
        skip = env.run_tactic(env.initial_state, "set_option debug.skipKernelTC true in decide +kernel")
        assert isinstance(skip, TacticError) and "debug.skipKernelTC" in skip.message
        out = env.run_tactic(env.initial_state, "simp")
        assert isinstance(out, TacticError) and "kernel replay did not finish" in out.message
        assert [f.kind for f in env.failures] == ["rejected"] and session.restarts == 1
        again = env.run_tactic(env.initial_state, 'trace "37"')
        assert isinstance(again, State) and again.text == "⊢ f = 37"
    sent = requests_sent(lean_repl.log)
    assert not any("skipKernelTC" in json.dumps(r) for r in sent)
    assert [list(r)[0] for r in sent if "pickleTo" in r or "unpickleEnvFrom" in r] == ["pickleTo", "unpickleEnvFrom"]
    session.close()


def test_heartbeat_wrapping_leaves_states_and_ids_as_they_were(lean_repl):
    """Each tactic goes to Lean under `set_option maxHeartbeats N in`; the answers, states and
    ids are those of the tactic sent bare (max_heartbeats=0)."""
    seen = {}
    for limit in (0, 400000):
        session = ReplSession(lean_repl("v4.24.0", ["proof_branching"], max_heartbeats=limit))
        with ReplEnv(ReplTarget("complex_and", statement=COMPLEX_AND), session) as env:
            two = env.run_tactic(env.initial_state, "apply And.intro")
            one = env.run_tactic(two, "exact h1.left")
            seen[limit] = ([two, one], dict(env._repl_ids))
        session.close()
    assert seen[0] == seen[400000]
    tactics = [r["tactic"] for r in requests_sent(lean_repl.log) if "tactic" in r]
    assert tactics == ["apply And.intro", "exact h1.left",
                       "set_option maxHeartbeats 400000 in\napply And.intro",
                       "set_option maxHeartbeats 400000 in\nexact h1.left"]


def test_no_goals_left_is_not_trusted(lean_repl):
    """The REPL reports no goals left, yet the theorem does not compile: Lean's real error
    rejects the candidate. A kernel error in proofStatus is a failed tactic."""
    session = ReplSession(lean_repl("v4.24.0", ["app_type_mismatch", "app_type_mismatch2"], root="sorry"))
    with ReplEnv(ReplTarget("one_eq_zero", statement="example : 1 = 0"), session) as env:
        state = env.run_tactic(env.run_tactic(env.initial_state, "cases 1"), "rfl")
        kernel = env.run_tactic(state, "have: true := by\n    apply ?succ\n    trivial")
        assert isinstance(kernel, TacticError) and kernel.message.startswith("proofStatus: Error: kernel")
        assert isinstance(env.run_tactic(state, "have: true := sorry"), GivenUp)
        rejected = env.run_tactic(state, "apply ?succ")
        assert isinstance(rejected, TacticError)
        assert "declaration has metavariables" in rejected.message
        assert [f.kind for f in env.failures] == ["rejected"]
    sent = requests_sent(lean_repl.log)
    assert not any("sorry" in r.get("tactic", "") for r in sent)  # never asked of Lean
    fresh = fresh_name("example : 1 = 0")
    assert sent[-1] == {"cmd": f"theorem {fresh} : 1 = 0 := by\n  cases 1\n  rfl\n  apply ?succ"}
    session.close()


def test_a_tactic_that_ends_the_by_block_is_never_sent(lean_repl):
    """Text that would dedent out of the proof and declare an axiom is a failed tactic before
    Lean sees it (in tactic mode the REPL would run it; in the check it would end the proof)."""
    session = ReplSession(lean_repl("v4.24.0", ["proof_branching"]))
    with ReplEnv(ReplTarget("complex_and", statement=COMPLEX_AND), session) as env:
        out = env.run_tactic(env.initial_state, "apply And.intro\naxiom cheat : False")
        assert isinstance(out, TacticError) and "command keyword `axiom`" in out.message
        assert isinstance(env.run_tactic(env.initial_state, "apply And.intro"), State)  # the REPL lives
    assert not any("axiom" in r.get("tactic", "") + r.get("cmd", "") for r in requests_sent(lean_repl.log))
    session.close()


def test_failed_tactics(lean_repl):
    session = ReplSession(lean_repl("v4.24.0", ["invalid_tactic", "unknown_tactic"]))
    with ReplEnv(ReplTarget("my_theorem", statement="theorem my_theorem (x : Nat) : x = x"), session) as env:
        bad = env.run_tactic(env.initial_state, "exact my_fake_premise")
        assert bad == TacticError("Unknown identifier `my_fake_premise`")
    with ReplEnv(ReplTarget("f", statement="def f : Nat"), session) as env:
        unknown = env.run_tactic(env.initial_state, "exat 42")
        assert isinstance(unknown, TacticError) and "unknown tactic" in unknown.message
    session.close()


def test_timeout_kills_and_restarts_the_repl(lean_repl, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_REPL_HANG_ON", "exact h1.left")
    monkeypatch.setenv("FAKE_REPL_FAULT_ONCE", str(tmp_path / "fault"))
    session = ReplSession(lean_repl("v4.24.0", ["proof_branching"], timeout=1.0))
    with ReplEnv(ReplTarget("complex_and", statement=COMPLEX_AND), session) as env:
        two = env.run_tactic(env.initial_state, "apply And.intro")
        assert isinstance(env.run_tactic(two, "exact h1.left"), Timeout)
        assert session.restarts == 1 and not session.alive()  # lean-interact killed it
        # The next call starts a new REPL and rebuilds the state by replaying its tactics.
        one = env.run_tactic(two, "exact h1.left")
        assert isinstance(one, State) and one.text.endswith("⊢ r")
        assert [f.kind for f in env.failures] == ["timeout"]
    session.close()


def test_crash_restarts_then_the_run_goes_on(lean_repl, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_REPL_EXIT_ON", "apply h2")
    monkeypatch.setenv("FAKE_REPL_FAULT_ONCE", str(tmp_path / "fault"))
    session = ReplSession(lean_repl("v4.24.0", ["proof_branching"]))
    with ReplEnv(ReplTarget("complex_and", statement=COMPLEX_AND), session) as env:
        one = env.run_tactic(env.run_tactic(env.initial_state, "apply And.intro"), "exact h1.left")
        after = env.run_tactic(one, "apply h2")  # the REPL exits (137), restarts, retries
        assert isinstance(after, State) and after.text.endswith("⊢ q")
        assert [(f.kind, f.recovered) for f in env.failures] == [("crash", True)]
    session.close()


def test_a_repl_past_its_memory_bound_is_restarted_and_the_states_rebuilt(lean_repl):
    """The REPL process's own memory (lean-interact's measure) past env.repl.max_memory_gb:
    restarted before the next tactic, and the state rebuilt by replaying its tactics."""
    session = ReplSession(lean_repl("v4.24.0", ["proof_branching"], max_memory_gb=1 / 1024))  # 1 MiB
    with ReplEnv(ReplTarget("complex_and", statement=COMPLEX_AND), session) as env:
        two = env.run_tactic(env.initial_state, "apply And.intro")
        one = env.run_tactic(two, "exact h1.left")
        assert one.text == "case right\np q r : Prop\nh1 : p ∧ q\nh2 : q → r\n⊢ r"
        assert env.failures == []
    assert session.memory_restarts == session.restarts >= 2
    session.close()


def test_a_repl_that_keeps_dying_ends_the_theorem_only(lean_repl, monkeypatch):
    monkeypatch.setenv("FAKE_REPL_EXIT_ON", "apply h2")  # every time
    session = ReplSession(lean_repl("v4.24.0", ["proof_branching"]))
    env = ReplEnv(ReplTarget("complex_and", statement=COMPLEX_AND), session)
    with env:
        one = env.run_tactic(env.run_tactic(env.initial_state, "apply And.intro"), "exact h1.left")
        with pytest.raises(EnvCrash, match="failed 2 times"):
            env.run_tactic(one, "apply h2")
    assert [(f.kind, f.recovered) for f in env.failures] == [("crash", True), ("crash", False)]
    # The worker's session lives on: the next theorem opens on a fresh REPL.
    with ReplEnv(ReplTarget("complex_and", statement=COMPLEX_AND), session) as again:
        assert again.initial_state.text.endswith("⊢ p ∧ r")
    session.close()


def test_best_first_search_on_real_answers(lean_repl):
    session = ReplSession(lean_repl("v4.24.0", ["trace_simp", "app_type_mismatch", "app_type_mismatch2"],
                                    axioms=["propext"]))
    proved = best_first_search(ReplEnv(ReplTarget("ex", TRACE_SIMP_HEADER, "example : f = 37"), session),
                               NoPremises(), ScriptedTactics({"⊢ f = 37": ['trace "37"', "simp"]}), SearchConfig(8))
    assert proved.status == "proved" and proved.proof == ["simp"] and proved.env == "repl"
    assert proved.check["axioms"] == ["propext"] and proved.to_json()["check"]["native_decide_allowed"] is False
    assert proved.tree.outcomes == {"duplicate": 1, "proof": 1}
    session.close()

    session = ReplSession(lean_repl("v4.24.0", ["app_type_mismatch", "app_type_mismatch2"], root="sorry"))
    script = {"⊢ 1 = 0": ["cases 1"], "case zero\n⊢ 0 = 0\n\ncase succ\nn✝ : Nat\n⊢ n✝ + 1 = 0": ["rfl"],
              "case succ\nn✝ : Nat\n⊢ n✝ + 1 = 0": ["have: true := by\n    apply ?succ\n    trivial",
                                                    "apply ?succ"]}
    failed = best_first_search(ReplEnv(ReplTarget("e", statement="example : 1 = 0"), session),
                               NoPremises(), ScriptedTactics(script), SearchConfig(8))
    assert failed.status == "failed" and failed.stop_reason == "queue_empty"
    assert failed.tree.outcomes == {"error": 2, "new_state": 2} and failed.tree.max_depth == 2
    assert [f["kind"] for f in failed.env_failures] == ["rejected"]
    session.close()


def test_goals_text_matches_leandojo():
    assert goals_text(["case a\n⊢ p", "case b\nh : q\n⊢ r\n"]) == "case a\n⊢ p\n\ncase b\nh : q\n⊢ r"


LEAN_SRC = ("import Mathlib.Data.Nat.Basic\n-- import Foo in a comment\nimport Mathlib.Order.Basic\n\n"
            "namespace Foo\n\n/-- doc -/\ntheorem bar (h : (x := 1) = 1) :\n    1 = 1 := by\n  rfl\n\n"
            "@[simp]\nlemma baz : 2 = 2 := rfl\n\n"
            "/-- doc -/\n@[simp] private theorem qux : 3 = 3 := rfl\n\n"
            "open Nat in\nset_option linter.unusedVariables false in\n/-- doc -/\nprotected theorem Foo.quux : 4 = 4 := rfl\n")


@pytest.mark.parametrize("name, start, statement, chunks", [
    ("Foo.bar", (8, 1), "theorem bar (h : (x := 1) = 1) :\n    1 = 1", 2),  # under a doc comment
    ("Foo.baz", (12, 1), "lemma baz : 2 = 2", 3),  # under an attribute (a `lemma` starts there)
    ("Foo.qux", (16, 17), "theorem qux : 3 = 3", 4),  # a doc comment, an attribute, `private`, same line
    ("Foo.Foo.quux", (21, 11), "open Nat in\nset_option linter.unusedVariables false in\ntheorem Foo.quux : 4 = 4", 5),
])
def test_leandojo_record_header_ends_before_its_modifiers(tmp_path, name, start, statement, chunks):
    """The header ends at the command boundary before the doc comment, attributes, modifiers
    and `... in` commands (which Lean cannot parse dangling); the statement keeps the `in`s."""
    from prover.data.theorem import Theorem
    (tmp_path / "Foo").mkdir()
    (tmp_path / "Foo" / "Bar.lean").write_text(LEAN_SRC)
    target = target_from_source(Theorem("https://github.com/x/y", "abc", "Foo/Bar.lean", name, start, start, ()),
                                tmp_path)
    assert target.header[:2] == ("import Mathlib.Data.Nat.Basic\nimport Mathlib.Order.Basic", "\n\nnamespace Foo")
    assert len(target.header) == chunks  # the file's commands, cut at each declaration
    imports_end = LEAN_SRC.index("\n\nnamespace")
    assert LEAN_SRC[imports_end:].startswith("".join(target.header[1:]))
    assert target.statement == statement


def test_memory_check_names_both_numbers():
    memory_check(2, ReplConfig(memory_gb=8), available_gib=24)
    with pytest.raises(InsufficientMemory, match=r"^4 workers .* 32 GiB needed, this machine has 24.0 GiB"):
        memory_check(4, ReplConfig(memory_gb=8), available_gib=24)


def test_a_file_is_elaborated_once_for_all_its_sorries(data_root, tmp_path):
    """Lean's own answer to a file with a sorry inside a longer proof (Mathlib/test/file_env),
    served by a stand-in for the transport: two envs on its sorry send one FileCommand."""
    from tests.fake_repl.replay_repl import read_objects
    base = data_root / "lean-repl" / "v4.24.0" / "test" / "Mathlib" / "test"
    answer = read_objects((base / "file_env.expected.out").read_text())[1]
    lean_file = tmp_path / "Demo.lean"
    lean_file.write_text((base / "file_env.lean").read_text())
    sent = []

    class Transport(ReplSession):
        def request(self, request, timeout):
            sent.append(request)
            return answer

    session = Transport(ReplConfig())
    target = ReplTarget("demo", file=str(lean_file), position=(15, 2))
    for _ in range(2):
        with ReplEnv(target, session, patch_file=lambda tactics: b"") as env:
            assert env.initial_state.text == "P Q R : Prop\nh1 : P → Q\nh2 : Q → R\np : P\nq : Q\n⊢ Q"
    assert sent == [{"path": str(lean_file)}]
    lean_file.write_text(lean_file.read_text() + "\n")  # an edited file is elaborated again
    with ReplEnv(target, session, patch_file=lambda tactics: b"") as env:
        assert env.initial_state.id == 0
    assert len(sent) == 2


def test_a_worker_on_another_node_builds_its_own_repl(monkeypatch, tmp_path):
    """The driver's built REPL folder is not on every node of a cluster: a worker that does not
    find it has lean-interact fetch and build one there."""
    from prover.env import repl_session
    built = []
    monkeypatch.setattr(repl_session, "prepare", lambda cfg: built.append(cfg) or ReplConfig(repl_path="/node/repl"))
    here = ReplConfig(repl_path=str(tmp_path))
    assert repl_session.on_this_node(here) is here and built == []
    moved = repl_session.on_this_node(ReplConfig(repl_path=str(tmp_path / "driver-only")))
    assert moved.repl_path == "/node/repl" and built[0].repl_path is None


# Issue 60: the attacks of "no false proof, part three" on lean-interact's real process path.

def test_an_axiom_lean_prints_raw_is_refused_by_the_repl_env(lean_repl):
    """`axiom «]»» : False` added by meta-code: `#print axioms` prints `[]»]` (escapePart gives up
    on a part holding »), which reads as no axioms; Lean's components refuse it."""
    session = ReplSession(lean_repl("v4.24.0", ["trace_simp"], axioms=["]»"], lean_axioms=[["]»"]]))
    with ReplEnv(ReplTarget("ex", TRACE_SIMP_HEADER, "example : f = 37"), session) as env:
        out = env.run_tactic(env.initial_state, "simp")
    session.close()
    assert isinstance(out, TacticError) and "beyond Lean's standard ones" in out.message


def test_an_added_axiom_the_proof_does_not_cite_is_refused(lean_repl):
    session = ReplSession(lean_repl("v4.24.0", ["trace_simp"], axioms=["propext"], added=[[["cheat"], ["axiom"]]]))
    with ReplEnv(ReplTarget("ex", TRACE_SIMP_HEADER, "example : f = 37"), session) as env:
        out = env.run_tactic(env.initial_state, "simp")
    session.close()
    assert isinstance(out, TacticError) and out.message.endswith("no kernel check makes safe: cheat (axiom)")


@pytest.mark.parametrize("revision, why", [
    ("0" * 40, "is not a revision whose unpickleEnvFrom is known to replay through the kernel"),
    ("c9cde4d461fcf1d56e121bbe7d0c96a7ad40e492", "lean-toolchain is not leanprover/lean4:v4.30.0-rc1"),
])
def test_a_repl_not_known_to_replay_through_the_kernel_proves_nothing(lean_repl, revision, why):
    session = ReplSession(lean_repl("v4.24.0", ["trace_simp"], axioms=["propext"], revision=revision))
    with ReplEnv(ReplTarget("ex", TRACE_SIMP_HEADER, "example : f = 37"), session) as env:
        out = env.run_tactic(env.initial_state, "simp")
    session.close()
    assert isinstance(out, TacticError) and why in out.message and revision[:12] in out.message
    assert not [r for r in requests_sent(lean_repl.log) if "pickleTo" in r]  # no replay was trusted


def test_a_bypassing_repl_is_named(lean_repl, tmp_path):
    cfg = lean_repl("v4.24.0", ["trace_simp"], axioms=["propext"], revision="c9cde4d461fcf1d56e121bbe7d0c96a7ad40e492")
    (tmp_path / "repl" / "lean-toolchain").write_text("leanprover/lean4:v4.30.0-rc1\n")
    session = ReplSession(cfg)
    with ReplEnv(ReplTarget("ex", TRACE_SIMP_HEADER, "example : f = 37"), session) as env:
        out = env.run_tactic(env.initial_state, "simp")
    session.close()
    assert isinstance(out, TacticError) and "replayToElabEnv" in out.message and "unverified" not in out.message


def test_with_the_replay_off_a_proof_counts_only_when_the_user_says_so(lean_repl):
    target = ReplTarget("ex", TRACE_SIMP_HEADER, "example : f = 37")
    session = ReplSession(lean_repl("v4.24.0", ["trace_simp"], axioms=["propext"], kernel_replay=False))
    with ReplEnv(target, session) as env:
        off = env.run_tactic(env.initial_state, "simp")
    session.close()
    assert isinstance(off, TacticError) and "env.repl.kernel_replay=false" in off.message
    session = ReplSession(lean_repl("v4.24.0", ["trace_simp"], axioms=["propext"], kernel_replay=False,
                                    accept_proofs_without_kernel_replay=True))
    with ReplEnv(target, session) as env:
        done = env.run_tactic(env.initial_state, "simp")
    session.close()
    assert isinstance(done, ProofFinished) and done.check["guarantee"].startswith("NO kernel replay")
