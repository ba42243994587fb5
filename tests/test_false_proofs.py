"""No false proof: the attacks an adversary found (issue 47), each against the project's real code.

Lean's side is a stand-in that answers as Lean would, in Lean's formats: `#print axioms`
(src/Lean/Elab/Print.lean: `'NAME' depends on axioms: [..]`, names printed with `«»` escapes
where they need them), the "declaration uses 'sorry'" warning (placed at the declaration's
name), and the kernel replay of `unpickleEnvFrom` (a kernel exception ends the REPL process:
REPL/Main.lean does not catch it). Each answer is the test's choice of what Lean would say to
the attack; no test here says what Lean does with a proof it never saw.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from prover.data.lean_text import code_tokens, mask_non_code
from prover.env.source_target import command_start
from prover.env.text_check import DATA, command_words, tactic_text_problem
from prover.env.verdict import Status
from prover.env.verify import axioms_answer, check_proof, fresh_name, restate
from prover.env.lean_query import is_query
from tests.conftest import REPO
from tests.lean_standin import query_answer, split

STATEMENT = "theorem two_add_two : 2 + 2 = 5"


def info(data: str, env: int = 9) -> dict:
    return {"messages": [{"severity": "info", "pos": {"line": 1, "column": 0}, "data": data}], "env": env}


class Lean:
    """A stand-in REPL: the re-check compiles (env 5), `#print axioms` answers `printed`, the
    query (`prover.env.lean_query`) answers the fresh theorem and `added` as the constants the
    check's environment (5) and its replay (7) have of their own, none in the header's (0), and
    `axioms` (components; default: `printed`'s list cut at dots) as the fresh name's, and the
    kernel replay answers `kernel` ("" accepted, into env 7). Records what was sent (the
    queries as `query <env>`)."""

    def __init__(self, printed: str, kernel: str = "", axioms: list | None = None, added: list = ()) -> None:
        self.printed, self.kernel, self.sent = printed, kernel, []
        self.axioms, self.added = axioms, list(added)

    def command(self, cmd, env=None, timeout=None):
        if is_query(cmd):
            self.sent.append(f"query {env}")
            if env == 0:
                return query_answer(cmd, [], None)
            axioms = self.axioms
            if axioms is None:
                listed = self.printed.split("depends on axioms: [", 1)
                axioms = split([a.strip() for a in listed[1].rstrip("]").split(",") if a.strip()]) \
                    if len(listed) == 2 else []
            return query_answer(cmd, [[[NAME], []]] + self.added, axioms)
        self.sent.append(cmd)
        return info(self.printed, env=6) if cmd.startswith("#print axioms") else {"env": 5}

    def replay(self, env):
        self.sent.append(f"replay {env}")
        return (self.kernel, None) if self.kernel else ("", 7)


def check(lean: Lean, tactics: list[str], statement: str = STATEMENT, **kw):
    return check_proof(lean.command, 0, statement, tactics, replay=lean.replay, **kw)


NAME = fresh_name(STATEMENT)
NO_AXIOMS = f"'{NAME}' does not depend on any axioms"


# 1. A standard option lets search prove `2 + 2 = 5`: `decide +kernel` adds an auxiliary lemma
#    through mkAuxLemma and leaves it to the kernel; `debug.skipKernelTC` tells addDecl to skip
#    the kernel; the theorem only cites the lemma, so `#print axioms` lists nothing.

@pytest.mark.parametrize("tactic", [
    "set_option debug.skipKernelTC true in decide +kernel",
    "set_option «debug».«skipKernelTC» true in\n  decide +kernel",  # the same option, escaped
])
def test_an_option_that_skips_the_kernel_never_reaches_lean(tactic):
    lean = Lean(NO_AXIOMS)
    verdict = check(lean, [tactic])
    assert verdict.status is Status.REFUSED and "debug.skipKernelTC" in verdict.reason
    assert lean.sent == []


def test_a_lemma_the_kernel_never_saw_is_caught_by_the_kernel_replay():
    """Had the option reached Lean another way (meta-code), Lean answers as it did: no error,
    no axioms. The kernel's replay of what the check added rejects the auxiliary lemma."""
    lean = Lean(NO_AXIOMS, kernel="the kernel replay did not finish (a kernel exception ends the REPL): "
                                  "(kernel) declaration type mismatch, 'two_add_two._auxLemma.1'")
    verdict = check(lean, ["decide +kernel"])
    assert verdict.status is Status.KERNEL and "_auxLemma" in verdict.reason
    assert lean.sent == [f"theorem {NAME} : 2 + 2 = 5 := by decide +kernel", "replay 5"]
    # With the replay accepting, the same answers are a proof; with no replay to run, no proof.
    assert check(Lean(NO_AXIOMS), ["decide +kernel"]).ok
    assert check_proof(Lean(NO_AXIOMS).command, 0, STATEMENT, ["decide"]).status is Status.UNVERIFIED


def test_the_axioms_are_asked_in_the_replayed_environment():
    """Not in the check's own: a macro that meta-code registered there to rewrite the answer
    is not carried into the replay, which holds the constants only."""
    lean = Lean(NO_AXIOMS)
    sent = []
    command = lambda cmd, env=None, timeout=None: sent.append((cmd, env)) or lean.command(cmd, env)
    assert check_proof(command, 0, STATEMENT, ["decide"], replay=lean.replay).ok
    assert [(c if not is_query(c) else "query", e) for c, e in sent] == [
        (f"theorem {NAME} : 2 + 2 = 5 := by decide", 0), ("query", 5), ("query", 7), ("query", 0),
        (f"#print axioms {NAME}", 7)]
    assert NAME in sent[2][0] and NAME not in sent[1][0]  # the fresh name's axioms: in the replay


def test_weakening_options_come_from_leans_source():
    data = json.loads(DATA.read_text(encoding="utf-8"))
    assert "debug.skipKernelTC" in data["weakening_options"]
    assert all(tactic_text_problem([f"set_option {o} true in simp"]) for o in data["weakening_options"])


# 2. The axioms parser stripped `«»`: an axiom a tactic declares through meta-code and names
#    `«Classical.choice»` (one component) was read as Lean's `Classical.choice`; a `]` inside an
#    escaped name cut the list short, hiding a `sorryAx` after it.

def test_an_axiom_named_like_a_standard_one_is_not_it():
    """Lean answers components: `«Classical.choice»` is one part, Lean's axiom two."""
    lean = Lean(f"'{NAME}' depends on axioms: [propext, «Classical.choice»]",
                axioms=[["propext"], ["Classical.choice"]])
    verdict = check(lean, ["simp"])
    assert verdict.status is Status.AXIOMS and verdict.reason.endswith(': "Classical.choice"')


def test_a_bracket_inside_an_escaped_name_does_not_hide_sorry():
    lean = Lean(f"'{NAME}' depends on axioms: [«x], y», sorryAx]", axioms=[["x], y"], ["sorryAx"]])
    verdict = check(lean, ["simp"])
    assert verdict.status is Status.SORRY and verdict.axioms == ('"x], y"', "sorryAx")


# 3. prove-sorries accepted `exact sorryAx _ false` whenever another sorry was left in the
#    file: the text checks looked for `sorry`, the REPL counts only sorries written as `sorry`,
#    and the "declaration uses 'sorry'" warning was never read.

def _two_sorries(tmp_path: Path):
    from prover.sorries.find import find_sorries
    (tmp_path / "A.lean").write_text("theorem a : 1 = 1 := by sorry\ntheorem b : 2 = 2 := by sorry\n")
    return find_sorries(tmp_path)


def _recheck(tmp_path, proof, warned_at, axioms_of_a):
    """prove-sorries' re-check of `a` patched with `proof`, `b` still a sorry. Lean's answer:
    no error, `b`'s sorry left, a "declaration uses 'sorry'" warning at each name in
    `warned_at` (line, column of the name, as Lean places it), and `axioms_of_a`."""
    from prover.sorries.check import recheck_files_in_repl
    from prover.sorries.prove import SorryAttempt
    found = _two_sorries(tmp_path)
    attempt = SorryAttempt(found[0], "proved", proof=proof)
    sent = []

    def command(cmd, env=None, timeout=None):
        if is_query(cmd):  # the file as it is (env 1) has `a` and `b`; the patched one (0) too
            return query_answer(cmd, [[["a"], []], [["b"], []]], split(axioms_of_a))
        return info(f"'{cmd.split()[-1]}' depends on axioms: [{', '.join(axioms_of_a)}]")

    def run_file(path):
        original = path.name == "A.lean"
        if not original:
            sent.append(path.read_text())
        warnings = [{"severity": "warning", "pos": {"line": line, "column": col},
                     "data": "declaration uses 'sorry'"} for line, col in warned_at]
        return {"env": 1 if original else 0, "messages": warnings,
                "sorries": [{"proofState": 0, "goal": "⊢ 2 = 2"}]}

    counts = recheck_files_in_repl([attempt], tmp_path, run_file, command, replay=lambda env: ("", env))
    return attempt, counts, sent


def test_sorryax_written_out_is_refused_before_lean(tmp_path):
    attempt, counts, sent = _recheck(tmp_path, ["exact sorryAx _ false"], [(1, 8), (2, 8)], ["sorryAx"])
    assert counts["rejected"] == 1 and attempt.status == "error" and "sorryAx" in attempt.reason
    assert sent == []


def test_a_declaration_warned_for_sorry_is_not_proved_whatever_else_is_left(tmp_path):
    """The sorry came from meta-code, not text: Lean's warning lands in `a` itself."""
    attempt, counts, _ = _recheck(tmp_path, ["my_tactic"], [(1, 8), (2, 8)], ["propext"])
    assert counts["rejected"] == 1 and "sorry: Lean warns that a uses sorry" in attempt.reason


def test_sorryax_in_the_patched_declaration_is_not_excused_by_other_sorries(tmp_path):
    attempt, counts, _ = _recheck(tmp_path, ["my_tactic"], [(2, 8)], ["propext", "sorryAx"])
    assert counts["rejected"] == 1 and "sorryAx" in attempt.reason


def test_an_honest_proof_beside_another_sorry_is_patched(tmp_path):
    attempt, counts, sent = _recheck(tmp_path, ["rfl"], [(2, 8)], ["propext"])
    assert counts["checked"] == 1 and attempt.status == "proved"
    assert sent == ["theorem a : 1 = 1 := by rfl\ntheorem b : 2 = 2 := by sorry\n"]


# 4. The text check and Lean disagreed on what is code.

@pytest.mark.parametrize("tactic", [
    "have «/-» : True := trivial\n  axiom cheat : False",  # an identifier to Lean, not a comment
    "exact h.1theorem t : False := cheat",  # `h`, `.1`, then a keyword
    "exact a⁻¹theorem t : False := cheat",
    "exact 2axiom cheat : False",
    "skip\n  run_cmd Lean.logInfo \"x\"", "skip\n  run_elab pure ()", "skip\n  run_meta pure ()",
    "skip\n  alias foo := bar", "skip\n  notation3 \"x\" => 1", "skip\n  simproc foo (_) := fun _ => pure .continue",
    "skip\n  #guard_expr 1 = 1",
])
def test_text_lean_reads_as_a_command_is_refused(tactic):
    assert tactic_text_problem([tactic]) is not None


def test_the_lexer_reads_as_lean_reads():
    assert mask_non_code("have «/-» : True := trivial") == "have «/-» : True := trivial"
    assert [t for _, t, _ in code_tokens("2axiom h.1theorem")] == ["2", "axiom", "h", ".1", "theorem"]
    assert tactic_text_problem(["exact «axiom»", "exact theorem'", "exact Foo.theorem"]) is None


def test_command_words_are_data_from_leans_source():
    data = json.loads(DATA.read_text(encoding="utf-8"))
    assert data["sources"] and all(data["keywords"][w] for w in ("theorem", "axiom", "run_cmd", "alias"))
    assert {"theorem", "axiom", "run_cmd", "run_elab", "run_meta", "notation3", "simproc"} <= command_words()


def test_every_in_command_is_a_header_prefix():
    """`unseal f in` (Batteries' Fin lemmas) scopes the declaration after it, as `open ... in`."""
    text = "theorem x : True := trivial\n\nunseal foldr.loop in\ntheorem y (f : Nat) : f = f :=\n  rfl\n"
    cmd = command_start(mask_non_code(text), text.index("theorem y"))
    assert text[cmd.start:text.index("theorem y")] == "unseal foldr.loop in\n"


# 5. Looser: a name that merely ends in `.<fresh name>` was accepted, and the first matching
#    axioms line won.

def test_a_name_that_only_ends_in_the_fresh_name_is_no_answer():
    verdict = check(Lean(f"'Evil.{NAME}' does not depend on any axioms"), ["simp"])
    assert verdict.status is Status.UNVERIFIED and "no `depends on axioms` line" in verdict.reason


def test_two_answers_for_one_name_are_no_answer():
    answer = {"messages": [info(f"'{NAME}' depends on axioms: [propext]")["messages"][0],
                           info(f"'{NAME}' depends on axioms: [cheat]")["messages"][0]]}
    assert axioms_answer(answer, NAME) == f"2 axioms answers for {NAME}, not one"


def test_the_fresh_name_carries_the_namespace_lean_gives_it():
    text, name = restate("theorem succ_le : 1 ≤ 2", "Nat.succ_le")
    assert name == "Nat." + fresh_name("theorem succ_le : 1 ≤ 2") and text.startswith("theorem prover_check_")
    assert restate("theorem _root_.Foo.bar : True", "Foo.bar")[1] == "Foo." + fresh_name("theorem _root_.Foo.bar : True")


def test_one_function_says_proved():
    """Only `prover.env.verdict.decide` makes a Verdict or says PROVED; an env's finished proof
    carries its verdict; search's "proved" comes only from a finished proof."""
    sources = [p for d in ("prover", "retriever", "generator", "benchmarks") for p in (REPO / d).rglob("*.py")]
    made, proved, finished, stops = [], [], [], []
    for path in sources:
        rel = path.relative_to(REPO).as_posix()
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            code = line.split("#", 1)[0]
            if re.search(r"\bVerdict\(", code) and rel != "prover/env/verdict.py":
                made.append(f"{rel}:{i + 1}")
            if "Status.PROVED" in code and rel != "prover/env/verdict.py":
                proved.append(f"{rel}:{i + 1}")
            if re.search(r"\bProofFinished\((?!\))", code) and "isinstance" not in code and rel != "prover/env/base.py":
                finished.append((rel, code))
            if re.search(r"status\s*=\s*(PROVED|\"proved\")|_Stop\(PROVED\)", code):
                stops.append(rel)
    assert made == [] and proved == []
    assert finished and all("decide(" in code or "verdict)" in code for _, code in finished)
    assert set(stops) == {"prover/search/best_first.py"}
