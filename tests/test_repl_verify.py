"""prover.env.verify: the one check a found proof passes before it counts or is written.

The axioms answer's format is Lean's (src/Lean/Elab/Print.lean): `'NAME' depends on axioms:
[a, b, c]` or `'NAME' does not depend on any axioms`, the list broken over lines when long."""
from __future__ import annotations

import json

import pytest

from prover.env.base import ProofFinished, State, TacticError
from prover.env.repl_env import ReplEnv, ReplTarget, target_from_source
from prover.env.repl_session import ReplConfig, ReplSession
from prover.env.text_check import tactic_text_problem
from prover.env.verdict import Status, lean_axioms_problem
from prover.env.lean_query import is_query
from prover.env.verify import axioms_answer, check_proof, fresh_name, restate
from tests.lean_standin import query_answer
from tests.conftest import require


def info(data: str) -> dict:
    return {"messages": [{"severity": "info", "pos": {"line": 1, "column": 0}, "data": data}], "env": 9}


@pytest.mark.parametrize("data, axioms", [
    ("'Foo.prover_check_1' depends on axioms: [propext, Classical.choice, Quot.sound]",
     ("propext", "Classical.choice", "Quot.sound")),
    ("'Foo.prover_check_1' does not depend on any axioms", ()),
    # a long list is wrapped by Lean's formatter: a line break and an indent after a comma
    ("'Foo.prover_check_1' depends on axioms: [propext,\n  sorryAx,\n  Classical.choice,\n  Quot.sound]",
     ("propext", "sorryAx", "Classical.choice", "Quot.sound")),
    ("'Foo.prover_check_1' depends on axioms: [Lean.ofReduceBool, Lean.trustCompiler]",
     ("Lean.ofReduceBool", "Lean.trustCompiler")),
    # names as Lean writes them: the escapes are kept, and a `]` or `,` inside one is part of it
    ("'Foo.prover_check_1' depends on axioms: [«my axiom», «a], b», propext]", ("«my axiom»", "«a], b»", "propext")),
    # a private declaration's name, as Lean prints it
    ("'_private.Foo.Bar.0.Foo.prover_check_1' depends on axioms: [propext]", ("propext",)),
])
def test_axioms_answer_is_parsed(data, axioms):
    assert axioms_answer(info(data), "Foo.prover_check_1") == axioms


def test_axioms_of_another_name_or_an_error_are_no_answer():
    assert isinstance(axioms_answer(info("'other' depends on axioms: [propext]"), "prover_check_1"), str)
    assert axioms_answer({"messages": [{"severity": "error", "data": "unknown constant 'prover_check_1'"}]},
                         "prover_check_1") == "unknown constant 'prover_check_1'"


def test_only_the_standard_axioms_pass():
    """Decided on Lean's components: `("Classical.choice",)` (one part) is not Lean's axiom."""
    assert lean_axioms_problem([("propext",), ("Classical", "choice"), ("Quot", "sound")], False) is None
    assert lean_axioms_problem([("sorryAx",)], False) == (Status.SORRY, "the proof depends on sorryAx")
    assert lean_axioms_problem([("Lean", "ofReduceBool")], False)[1].startswith(
        "the proof depends on Lean.ofReduceBool (native_decide)")
    assert lean_axioms_problem([("Lean", "ofReduceBool"), ("Lean", "trustCompiler")], True) is None
    assert lean_axioms_problem([("Lean", "ofReduceBool"), ("cheat",)], True) == \
        (Status.AXIOMS, "the proof depends on axioms beyond Lean's standard ones: cheat")
    assert lean_axioms_problem([("Classical.choice",)], False)[0] is Status.AXIOMS


@pytest.mark.parametrize("tactic", [
    "simp\naxiom cheat : False",  # on its own line: the `by` block ends, an axiom is declared
    "exact h axiom cheat : False",  # on the same line: the tactic parser stops there too
    "simp; theorem t : False := cheat",
    "exact foo\n  #eval IO.println 1",
    "skip\n  @[simp] theorem t : True := trivial",
    "exact h\rinstance : Foo := cheat",  # a carriage return is no line break to the layout
])
def test_text_that_can_leave_its_proof_is_refused(tactic):
    assert tactic_text_problem([tactic]) is not None


@pytest.mark.parametrize("tactic", [
    "simp", "have h : True := by\n    trivial", "rw [foo] -- theorem in a comment\n  exact h",
    "set_option maxRecDepth 100 in\n  simp", "exact (by simpa using h : axiomOfChoice)",
    "induction n with\n| zero => simp\n| succ n ih => simp",  # LeanDojo's layout: alternatives at 0
    "have : #s ≤ #t := card_le h", "exact #[1, 2].size_pos", "exact inferInstance", "exact «axiom»",
])
def test_ordinary_tactics_pass_the_text_check(tactic):
    assert tactic_text_problem([tactic]) is None


def test_no_real_tactic_is_refused(data_root):
    """The 770 tactics of the real LeanDojo records (leandojo-real/val, leandojo-sample)."""
    tactics = [t["tactic"] for f in ("mathlib-src/leandojo-real/val.json", "leandojo-sample/test.json")
               for r in json.loads(require(data_root / f).read_text()) for t in r["traced_tactics"]]
    assert len(tactics) == 770 and [t for t in tactics if tactic_text_problem([t])] == []


def test_restated_under_a_fresh_name_with_identical_text():
    st = "open Nat in\ntheorem Nat.foo.{u} {α : Sort u} (x : Nat) :\n    x = x"
    text, name = restate(st)
    assert name == "Nat." + fresh_name(st)
    assert text == st.replace("Nat.foo", name)
    assert restate("example : f = 37") == (f"theorem {fresh_name('example : f = 37')} : f = 37",
                                           fresh_name("example : f = 37"))


class Recorder:
    """A stand-in REPL transport: answers from a script, records each request (not Lean)."""

    def __init__(self, answers):
        self.answers, self.sent = answers, []

    def command(self, cmd, env=None, timeout=None):
        self.sent.append((cmd, env))
        return self.answers(cmd)


def test_an_escaping_proof_never_reaches_lean():
    lean = Recorder(lambda cmd: {"env": 1})
    verdict = check_proof(lean.command, 0, "theorem t : False", ["skip\naxiom cheat : False", "exact cheat"])
    assert verdict.status is Status.REFUSED and "command keyword `axiom`" in verdict.reason and lean.sent == []


def test_a_proof_whose_axioms_include_its_own_is_rejected():
    """The attack the text check would miss if the axiom came from a tactic's meta-code: the
    axioms answer still names it."""
    name = fresh_name("theorem t : False")
    lean = Recorder(lambda cmd: info(f"'{name}' depends on axioms: [cheat]") if cmd.startswith("#print")
                    else query_answer(cmd, [], [["cheat"]]) if is_query(cmd) else {"env": 5})
    verdict = check_proof(lean.command, 0, "theorem t : False", ["exact cheat"], replay=lambda env: ("", env))
    assert (verdict.status, verdict.axioms, verdict.reason) == (
        Status.AXIOMS, ("cheat",), "the proof depends on axioms beyond Lean's standard ones: cheat")
    assert [(c if not is_query(c) else "query", e) for c, e in lean.sent] == [
        (f"theorem {name} : False := by exact cheat", 0), ("query", 5), ("query", 5), ("query", 0)]


class ScriptedSession(ReplSession):
    """A ReplSession whose transport is a script (a stand-in: no result comes from it)."""

    def __init__(self, answer):
        super().__init__(ReplConfig(max_heartbeats=0))
        self.answer, self.sent = answer, []

    def request(self, request, timeout):
        self.sent.append(request)
        return self.answer(request)


def kernel_repl(tmp_path):
    """A REPL checkout at a revision the table lists as replaying through the kernel (the
    upstream REPL at v4.24.0, whose transcripts the tests replay), as lean-interact leaves one."""
    folder = tmp_path / "repl"
    folder.mkdir(exist_ok=True)
    (folder / ".last_synced_commit").write_text("8fff8552292860d349b459d6a811e6915671dc0d\n")
    (folder / "lean-toolchain").write_text("leanprover/lean4:v4.24.0\n")
    return folder


def test_equation_compiler_theorem_is_checked_against_its_own_statement(data_root, tmp_path):
    """Nat.Partrec.Code.const_inj is proved by equations (no top-level `:=`). Its statement
    used to run on into the next declaration, whose goal became the root: a proof of that
    goal counted. Now the root and the re-check are const_inj's own signature."""
    from prover.data.theorem import Theorem
    real = require(data_root / "mathlib-src" / "leandojo-real")
    rec = next(r for r in json.loads((real / "val.json").read_text()) if r["full_name"] == "Nat.Partrec.Code.const_inj")
    thm = Theorem(rec["url"], rec["commit"], rec["file_path"], rec["full_name"], tuple(rec["start"]), tuple(rec["end"]), ())
    target = target_from_source(thm, real / "source")
    assert target.statement == ("theorem const_inj : ∀ {n₁ n₂}, Nat.Partrec.Code.const n₁ = "
                                "Nat.Partrec.Code.const n₂ → n₁ = n₂")
    name = fresh_name(target.statement)

    def answer(req):
        if "tactic" in req:
            return {"proofState": 1, "goals": []}
        if "pickleTo" in req or "unpickleEnvFrom" in req:  # the kernel replay accepts
            return {"env": req.get("env", 99)}  # unpickled: a new environment, 99
        if req["cmd"].startswith("#print axioms"):
            return info(f"'Nat.Partrec.Code.{name}' depends on axioms: [propext]")
        if is_query(req["cmd"]):
            return query_answer(req["cmd"], [], [["propext"]], env=50 + len(session.sent))
        if req["cmd"].endswith(":= by sorry"):
            return {"sorries": [{"proofState": 0, "goal": "⊢ ∀ {n₁ n₂ : ℕ}, const n₁ = const n₂ → n₁ = n₂"}], "env": 9}
        return {"env": len(session.sent)}

    session = ScriptedSession(answer)
    session.read_revision(str(kernel_repl(tmp_path)))
    with ReplEnv(target, session) as env:
        done = env.run_tactic(env.initial_state, "intro n₁ n₂ h; exact h")
    assert isinstance(done, ProofFinished) and done.check["ok"]
    cmds = [r["cmd"] for r in session.sent if "cmd" in r and not is_query(r["cmd"])]
    assert cmds[-3] == target.statement + " := by sorry"
    assert cmds[-2] == target.statement.replace("const_inj", name) + " := by intro n₁ n₂ h; exact h"
    assert "def id" not in cmds[-3] and "| 0, 0" not in cmds[-3]
    assert cmds[-1] == f"#print axioms Nat.Partrec.Code.{name}"  # exactly the name Lean gives it
    kernel = [list(r) for r in session.sent if "pickleTo" in r or "unpickleEnvFrom" in r]
    assert kernel == [["pickleTo", "env"], ["unpickleEnvFrom"]]
    asked = [r for r in session.sent if "cmd" in r and is_query(r["cmd"]) and "prover_check_" in r["cmd"]]
    # the fresh name's axioms (components, built in Lean) and #print axioms: in the kernel's replay
    assert [r["env"] for r in asked] == [99] and session.sent[-1]["env"] == 99
    assert '(Name.mkStr (Name.mkStr (Name.mkStr (Name.mkStr Name.anonymous "Nat") "Partrec") "Code") ' \
           f'"{name}")' in asked[0]["cmd"]


def test_a_runaway_tactic_is_a_failed_tactic_and_its_state_lives():
    """Under the heartbeat limit Lean answers a runaway tactic with an error (its message as
    Lean's core writes it), read as a failed tactic; the REPL is not killed and the state it
    ran on is used again."""
    heartbeats = ("(deterministic) timeout at `whnf`, maximum number of heartbeats (400000) has been "
                  "reached\nUse `set_option maxHeartbeats <num>` to set the limit.")

    def answer(req):
        if "cmd" in req:
            return {"sorries": [{"proofState": 0, "goal": "⊢ p"}], "env": 0}
        if "nlinarith" in req["tactic"]:
            return {"messages": [{"severity": "error", "data": heartbeats}], "proofState": 1, "goals": []}
        return {"proofState": 2, "goals": ["⊢ q"]}

    session = ScriptedSession(answer)
    session.cfg = ReplConfig(max_heartbeats=400000)
    with ReplEnv(ReplTarget("t", statement="theorem t : p"), session) as env:
        failed = env.run_tactic(env.initial_state, "nlinarith [sq_nonneg x]")
        assert isinstance(failed, TacticError) and "maximum number of heartbeats" in failed.message
        after = env.run_tactic(env.initial_state, "apply h")
        assert after == State("⊢ q", 1)
    assert session.restarts == 0
    assert [r["tactic"] for r in session.sent if "tactic" in r] == [
        "set_option maxHeartbeats 400000 in\nnlinarith [sq_nonneg x]", "set_option maxHeartbeats 400000 in\napply h"]
    assert [r["proofState"] for r in session.sent if "tactic" in r] == [0, 0]
