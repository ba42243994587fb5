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
   A REPL whose revision is not one known to replay through the kernel
   (`prover.env.repl_revision`), a replay switched off, or one that could not run: `unverified`,
   unless the user passed `env.repl.accept_proofs_without_kernel_replay=true`, and then the
   verdict's `guarantee` says so (every summary row and written file carries it).
5. `added`: the proof added a constant no kernel check makes safe: an `axiom` (SafeVerify's rule:
   GasStationManager/SafeVerify, Main.lean, `checkAxioms` and `replayFile`'s `isUnsafe`/`isPartial`
   refusals), an `opaque`, a `partial` or `unsafe` definition, or one with `@[implemented_by]` or
   `@[extern]` (code the compiler runs instead of the kernel's term). Lean answers which, by
   constant kind, in the replayed environment (`prover.env.lean_query`).
6. `axioms`: an axiom beyond `propext`, `Classical.choice` and `Quot.sound` (Lean's
   `Lean.ofReduceBool` and `Lean.trustCompiler` too, unless native_decide is allowed), decided on
   Lean's own answer as name components (`Lean.collectAxioms` in the replayed environment, printed
   as JSON): no printed name is parsed. `#print axioms` is a second opinion only: when its list
   disagrees with the components, the verdict is `unverified`.
7. `unverified`: evidence a sure verdict needs is missing or ambiguous (no axioms answer, two
   answers for one name, the kernel replay could not run). A check that cannot be sure fails.
8. `proved`: none of the above, with every check the source requires done.

What each source can show differs, and the verdict records which checks ran (`checks`):
the REPL runs all of them; lean-dojo's Dojo (Lean before v4.12) reports a finished proof with
no `sorry` but gives no axioms answer or kernel replay in tactic mode; the replay simulator
runs no Lean at all (its "proved" is a replayed record, never pass@1). `Verdict.guarantee`
names what stands behind a proof, so a summary can show it beside the count.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

STANDARD_AXIOMS = ("propext", "Classical.choice", "Quot.sound")
# What `native_decide` adds: trust in the compiler, not the kernel.
NATIVE_AXIOMS = ("Lean.ofReduceBool", "Lean.trustCompiler")
SORRY_AXIOM = "sorryAx"
# The same, as Lean's name components (what `Lean.collectAxioms` answers through the query).
STANDARD_COMPONENTS = tuple(tuple(a.split(".")) for a in STANDARD_AXIOMS)
NATIVE_COMPONENTS = tuple(tuple(a.split(".")) for a in NATIVE_AXIOMS)
SORRY_COMPONENTS = (SORRY_AXIOM,)

Components = tuple  # a Lean name as its components: strings, and ints for numeric parts

# What stands behind a proof of each kind (Verdict.guarantee).
GUARANTEE_KERNEL = "kernel replay"
GUARANTEE_NO_KERNEL = "NO kernel replay (env.repl.accept_proofs_without_kernel_replay=true)"
GUARANTEE_LEANDOJO = "lean-dojo Dojo: no error, no sorry; no axioms answer, no kernel replay"
GUARANTEE_REPLAY = "simulator: a recorded proof replayed, no Lean"


class Status(str, enum.Enum):
    PROVED = "proved"
    REFUSED = "refused"
    ERROR = "error"
    SORRY = "sorry"
    AXIOMS = "axioms"
    KERNEL = "kernel"
    ADDED = "added"
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
    # Per checked declaration, its axioms as `#print axioms` listed them (escapes kept), or a
    # string saying why no single answer was read. The second opinion only. Empty: none asked.
    axioms: Mapping[str, tuple[str, ...] | str] = field(default_factory=dict)
    # Per checked declaration, its axioms as Lean's `collectAxioms` answered them, each name as
    # its components (`prover.env.lean_query`), or why no answer was read. The decision.
    lean_axioms: Mapping[str, tuple[Components, ...] | str] = field(default_factory=dict)
    # The constants the proof added that no kernel check makes safe, each (components, what it
    # is: "axiom", "opaque", "partial", "unsafe", "implemented_by", "extern"); a string: why
    # Lean's answer could not be read; None: not asked.
    added: Sequence[tuple[Components, str]] | str | None = None
    declarations: Sequence[str] = ()  # the names whose axioms a verdict needs
    # The kernel replay: None not run, "" accepted, else why it rejected (or stopped the REPL:
    # a kernel exception while unpickling ends the REPL process, so the two look alike).
    kernel: str | None = None
    kernel_unavailable: str | None = None  # why the replay was not run (off, an unknown REPL)
    # The user's explicit choice to count a REPL proof with no kernel replay behind it
    # (env.repl.accept_proofs_without_kernel_replay); the verdict's guarantee then says so.
    accept_without_kernel: bool = False


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
    guarantee: str | None = None  # for `proved`: what stands behind it (GUARANTEE_*)

    @property
    def ok(self) -> bool:
        return self.status is Status.PROVED

    def to_json(self) -> dict:
        return {"status": self.status.value, "ok": self.ok, "reason": self.reason,
                "axioms": list(self.axioms), "native_decide_allowed": self.native_decide_allowed,
                "name": self.name, "checks": list(self.checks), "guarantee": self.guarantee}


def shown(name: Components) -> str:
    """A name's components for a reason line: plain parts joined by dots, any other part quoted
    as JSON (so `]»`, `a✝` and macro scopes show as what they are)."""
    import json
    import re
    return ".".join(str(p) if isinstance(p, int) or re.fullmatch(r"[A-Za-z_][\w'!?]*", p)
                    else json.dumps(p, ensure_ascii=False) for p in name)


def lean_axioms_problem(axioms: Sequence[Components], allow_native_decide: bool) -> tuple[Status, str] | None:
    """Why these axioms (Lean's answer, as components) reject a proof, or None. Compared as
    components: `«Classical.choice»` (one part) is not Lean's `Classical.choice` (two)."""
    allowed = STANDARD_COMPONENTS + (NATIVE_COMPONENTS if allow_native_decide else ())
    bad = [tuple(a) for a in axioms if tuple(a) not in allowed]
    if not bad:
        return None
    if SORRY_COMPONENTS in bad:
        return Status.SORRY, "the proof depends on sorryAx"
    native = [a for a in bad if a in NATIVE_COMPONENTS]
    if native and len(native) == len(bad):
        return Status.AXIOMS, (f"the proof depends on {', '.join(map(shown, native))} (native_decide): not "
                               f"allowed (env.repl.allow_native_decide=false)")
    return Status.AXIOMS, f"the proof depends on axioms beyond Lean's standard ones: {', '.join(map(shown, bad))}"


def opinions_agree(printed: Sequence[str], lean: Sequence[Components]) -> bool:
    """Whether `#print axioms`' list (escapes kept) names the same axioms as Lean's components:
    the same count, each printed name with its `«»` removed equal to its components joined by
    dots. It never decides a proof; a disagreement (a name Lean prints raw, such as `]»`, cuts
    the printed list short) only refuses one."""
    def plain(item: str) -> str:
        return item.replace("«", "").replace("»", "")
    return sorted(map(plain, printed)) == sorted(".".join(map(str, a)) for a in lean)


def decide(ev: Evidence, name: str | None = None) -> Verdict:
    """The verdict on `ev` (see the module docstring for the order)."""
    required = _REQUIRED[ev.source]
    checks: list[str] = []

    def verdict(status: Status, reason: str | None, missing: str | None = None,
                axioms: tuple[str, ...] = (), guarantee: str | None = None) -> Verdict:
        return Verdict(status, reason, axioms, ev.allow_native_decide, name, tuple(checks), missing,
                       guarantee)

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
    if "axioms" in required and not ev.declarations:
        return unverified("axioms", "no declaration to ask Lean the axioms of (an example has no name)")
    guarantee = {SOURCE_LEANDOJO: GUARANTEE_LEANDOJO, SOURCE_REPLAY: GUARANTEE_REPLAY}.get(ev.source)
    if "kernel" in required:
        if ev.kernel:
            return verdict(Status.KERNEL, ev.kernel)
        if ev.kernel is None and not ev.accept_without_kernel:
            return unverified("kernel", ev.kernel_unavailable or "the kernel replay was not run")
        if ev.kernel is None:
            guarantee = GUARANTEE_NO_KERNEL
        else:
            checks.append("kernel")
            guarantee = GUARANTEE_KERNEL
    listed: tuple[str, ...] = ()
    if "axioms" in required:
        if ev.added is None:
            return unverified("added", "Lean was not asked which constants the proof added")
        if isinstance(ev.added, str):
            return verdict(Status.UNVERIFIED, f"the constants the proof added: {ev.added}")
        if ev.added:
            what = ", ".join(f"{shown(n)} ({kind})" for n, kind in ev.added)
            return verdict(Status.ADDED, f"the proof adds constants no kernel check makes safe: {what}")
        checks.append("added")
        for decl in ev.declarations:
            lean = ev.lean_axioms.get(decl)
            if lean is None:
                return unverified("axioms", f"Lean was not asked the axioms of {decl}")
            if isinstance(lean, str):
                return verdict(Status.UNVERIFIED, f"the axioms of {decl}: {lean}")
            problem = lean_axioms_problem(lean, ev.allow_native_decide)
            if problem is not None:
                return verdict(problem[0], problem[1], axioms=tuple(map(shown, lean)))
            printed = ev.axioms.get(decl)
            if printed is None:
                return unverified("axioms", f"#print axioms {decl} was not asked")
            if isinstance(printed, str) or not opinions_agree(printed, lean):
                said = printed if isinstance(printed, str) else f"[{', '.join(printed)}]"
                return verdict(Status.UNVERIFIED, f"#print axioms {decl} disagrees with Lean's collectAxioms "
                                                  f"({said} against [{', '.join(map(shown, lean))}])")
            listed += tuple(a for a in map(shown, lean) if a not in listed)
        checks.append("axioms")
    return verdict(Status.PROVED, None, axioms=listed, guarantee=guarantee)
