"""The one verdict: whether a found proof counts, decided from the evidence its check gathered.

Every path that counts or writes a proof ends here: the REPL's statement check and file check
(`prover.env.verify`), the lean-dojo environment, the replay simulator, and `prove-sorries`'
re-check of the files it writes. Each gathers `Evidence` (what Lean said) and calls `decide`;
no other code says "proved" (a test greps for it), and only `decide` makes a `Verdict`.

The shape follows Kimina Lean Server's one analysis of a REPL answer into one status: a closed
set of statuses, each with its reason, read in a fixed order so the first failure is the one
reported:

1. `refused`: the tactic text could leave its proof or weaken Lean's checks
   (`prover.env.text_check`); Lean never saw it.
2. `error`: Lean reported an error (a message of severity error, or a REPL-level message).
3. `sorry`: the checked declaration uses `sorry`: goals left as sorries, a "declaration uses
   'sorry'" warning placed in that declaration, or `sorryAx` among its axioms. Sorries elsewhere
   in a file do not excuse it.
4. `kernel`: Lean's kernel, replaying every constant the check added (the checked theorem and
   each auxiliary lemma it cites) into a fresh import of the header's modules, rejected one.
5. `axioms`: an axiom beyond `propext`, `Classical.choice` and `Quot.sound` (Lean's
   `Lean.ofReduceBool` and `Lean.trustCompiler` too, unless native_decide is allowed).
6. `unverified`: evidence a sure verdict needs is missing or ambiguous (no axioms answer, two
   answers for one name, the kernel replay could not run). A check that cannot be sure fails.
7. `proved`: none of the above, with every check the source requires done.

What each source can show differs, and the verdict records which checks ran (`checks`):
the REPL runs all of them; lean-dojo's Dojo (Lean before v4.12) reports a finished proof with
no `sorry` but gives no axioms answer or kernel replay in tactic mode; the replay simulator
runs no Lean at all (its "proved" is a replayed record, never pass@1).
"""
from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

STANDARD_AXIOMS = ("propext", "Classical.choice", "Quot.sound")
# What `native_decide` adds: trust in the compiler, not the kernel.
NATIVE_AXIOMS = ("Lean.ofReduceBool", "Lean.trustCompiler")
SORRY_AXIOM = "sorryAx"


class Status(str, enum.Enum):
    PROVED = "proved"
    REFUSED = "refused"
    ERROR = "error"
    SORRY = "sorry"
    AXIOMS = "axioms"
    KERNEL = "kernel"
    UNVERIFIED = "unverified"


# Where evidence comes from, and what a verdict of `proved` requires from each.
SOURCE_REPL = "repl"  # the Lean REPL: Lean's messages, axioms per declaration, the kernel replay
SOURCE_LEANDOJO = "leandojo"  # Dojo's ProofFinished: no error, no sorry; nothing more is shown
SOURCE_REPLAY = "replay"  # the simulator: a recorded proof replayed, no Lean
_REQUIRED = {SOURCE_REPL: ("text", "lean", "axioms", "kernel"),
             SOURCE_LEANDOJO: ("text", "lean"),
             SOURCE_REPLAY: ("text",)}


@dataclass(frozen=True)
class Evidence:
    """What a check gathered. A field left None was not gathered (the check stopped earlier, or
    the source cannot show it); `decide` says which missing piece kept it from a verdict."""

    source: str
    allow_native_decide: bool = False
    text_problem: str | None = None  # why the tactic text was refused (None: it passed)
    text_checked: bool = False
    # Lean's answer for the checked declaration(s): errors, goals left as sorries, and the
    # declarations whose "declaration uses 'sorry'" warning fell in them. None: Lean not asked.
    errors: Sequence[str] | None = None
    sorries_left: int | None = None
    sorry_warnings: Sequence[str] = ()
    # Per checked declaration (by the exact name Lean prints), its axioms as Lean listed them,
    # or a string saying why no single answer was read. Empty: none asked.
    axioms: Mapping[str, tuple[str, ...] | str] = field(default_factory=dict)
    declarations: Sequence[str] = ()  # the names whose axioms a verdict needs
    # The kernel replay: None not run, "" accepted, else why it rejected (or stopped the REPL:
    # a kernel exception while unpickling ends the REPL process, so the two look alike).
    kernel: str | None = None
    kernel_required: bool = True  # False: switched off by the user (env.repl.kernel_replay=false)


@dataclass(frozen=True)
class Verdict:
    """A proof's verdict: its status, why, and what was checked. Made only by `decide`."""

    status: Status
    reason: str | None
    axioms: tuple[str, ...] = ()
    native_decide_allowed: bool = False
    name: str | None = None  # the name the statement was proved under (the fresh one)
    checks: tuple[str, ...] = ()  # which checks ran: text, lean, axioms, kernel
    missing: str | None = None  # for `unverified`: the evidence that was not gathered

    @property
    def ok(self) -> bool:
        return self.status is Status.PROVED

    def to_json(self) -> dict:
        return {"status": self.status.value, "ok": self.ok, "reason": self.reason,
                "axioms": list(self.axioms), "native_decide_allowed": self.native_decide_allowed,
                "name": self.name, "checks": list(self.checks)}


def axioms_problem(axioms: Sequence[str], allow_native_decide: bool) -> tuple[Status, str] | None:
    """Why these axioms (as Lean printed them, escapes kept) reject a proof, or None."""
    allowed = STANDARD_AXIOMS + (NATIVE_AXIOMS if allow_native_decide else ())
    bad = [a for a in axioms if a not in allowed]
    if not bad:
        return None
    if SORRY_AXIOM in bad:
        return Status.SORRY, "the proof depends on sorryAx"
    native = [a for a in bad if a in NATIVE_AXIOMS]
    if native and len(native) == len(bad):
        return Status.AXIOMS, (f"the proof depends on {', '.join(native)} (native_decide): not allowed "
                               f"(env.repl.allow_native_decide=false)")
    return Status.AXIOMS, f"the proof depends on axioms beyond Lean's standard ones: {', '.join(bad)}"


def decide(ev: Evidence, name: str | None = None) -> Verdict:
    """The verdict on `ev` (see the module docstring for the order)."""
    required = _REQUIRED[ev.source]
    checks: list[str] = []

    def verdict(status: Status, reason: str | None, missing: str | None = None,
                axioms: tuple[str, ...] = ()) -> Verdict:
        return Verdict(status, reason, axioms, ev.allow_native_decide, name, tuple(checks), missing)

    def unverified(what: str, reason: str) -> Verdict:
        return verdict(Status.UNVERIFIED, reason, missing=what)

    if ev.text_problem is not None:
        return verdict(Status.REFUSED, ev.text_problem)
    if not ev.text_checked:
        return unverified("text", "the tactic text was not checked")
    checks.append("text")
    if "lean" in required or ev.errors is not None:
        if ev.errors is None:
            return unverified("lean", "Lean's answer for the proof is missing")
        if ev.errors:
            return verdict(Status.ERROR, ev.errors[0])
        if ev.sorries_left:
            return verdict(Status.SORRY, f"the proof leaves {ev.sorries_left} goal(s) as sorry")
        if ev.sorry_warnings:
            return verdict(Status.SORRY, f"Lean warns that {', '.join(ev.sorry_warnings)} uses sorry")
        checks.append("lean")
    kernel = "kernel" in required and ev.kernel_required
    if kernel and ev.kernel:
        return verdict(Status.KERNEL, ev.kernel)
    if kernel and ev.kernel is None:
        return unverified("kernel", "the kernel replay was not run")
    if kernel:
        checks.append("kernel")
    listed: tuple[str, ...] = ()
    if "axioms" in required:
        if not ev.declarations:
            return unverified("axioms", "no declaration to ask Lean the axioms of (an example has no name)")
        for decl in ev.declarations:
            answer = ev.axioms.get(decl)
            if answer is None:
                return unverified("axioms", f"#print axioms {decl} was not asked")
            if isinstance(answer, str):
                return verdict(Status.UNVERIFIED, f"#print axioms {decl}: {answer}")
            problem = axioms_problem(answer, ev.allow_native_decide)
            if problem is not None:
                return verdict(problem[0], problem[1], axioms=answer)
            listed += tuple(a for a in answer if a not in listed)
        checks.append("axioms")
    return verdict(Status.PROVED, None, axioms=listed)
