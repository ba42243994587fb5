"""Gathering the evidence a found proof's verdict needs from the Lean REPL (`prover.env.verdict` decides).

Search runs tactics one at a time in the REPL's tactic mode, and "no goals left" there is not a
proof (REPL issue #44; a tactic can also close a goal that is not the theorem's). So a
candidate is checked again, cheapest first, each step stopping at the first failure:

1. Its text (`prover.env.text_check`): nothing that starts a command, names a sorry or weakens
   Lean's checks; such text never reaches Lean.
2. Lean proves the asked statement under a fresh name (`restate`): the statement the theorem
   was opened with, its text identical but for the declaration's name (`example` becomes
   `theorem`), `:=` the found tactics as one `by` block, in the environment the theorem was
   opened in: no error, no goal left as a sorry, no "declaration uses 'sorry'".
3. Lean's kernel replays every constant the check added, auxiliary lemmas included, into a
   fresh import of the header's modules, as lean4checker and SafeVerify do with
   `Lean.Environment.replay`: the REPL's `pickleTo` then `unpickleEnvFrom` (at the pinned
   toolchains, in both the upstream REPL and lean-interact's fork, unpickling replays the
   environment's own constants through the kernel; a kernel exception there ends the REPL
   process). This stops an auxiliary lemma added without the kernel (`debug.skipKernelTC`,
   `addDeclWithoutChecking` from meta-code) that the theorem merely cites.
4. Lean's own answer, in the replayed environment (`prover.env.lean_query`: one `#eval` that
   prints JSON): the constants of the environment's own part with what makes each unsafe, and
   `Lean.collectAxioms` of exactly that name (its namespace from the theorem's full name), each
   name as its components. The constants the proof added (those the header's environment
   lacks) must include no axiom, opaque, partial or unsafe constant, and none with
   `@[implemented_by]`/`@[extern]` (asked in the check's own environment, where attributes
   live); the axioms, compared as components, must be standard. No printed name is parsed: an
   axiom named `]»` prints raw, and `#print axioms` then reads `[]»]`.
5. `#print axioms` of that name, in the same replay, as a second opinion: its list, read with
   Lean's `«»` escaping, must name the same axioms, or the verdict is `unverified`.
   The replay holds the constants and nothing else the check's elaboration left behind (a
   `macro_rules` or attribute that meta-code registered to rewrite an answer is not carried
   over). Without a kernel replay (switched off, `env.repl.kernel_replay=false`, or a REPL
   revision not known to run one, `prover.env.repl_revision`) the verdict is `unverified`
   unless `env.repl.accept_proofs_without_kernel_replay` is set; then Lean is asked in the
   check's own environment, and the verdict's guarantee says "NO kernel replay".

For a sorry in a project file (`prove-sorries`, and search on a file target) the file is the
reference: the file with the proofs in place must elaborate with no error; each patched
declaration must have no "declaration uses 'sorry'" warning inside its own span and no
`sorryAx` among its axioms (sorries elsewhere in the file do not excuse it), and the file's
environment passes the kernel replay.

What this does not stop: meta-code that tampers with how the REPL itself answers within the
same process (the replay runs in that process, on its answers), and a wrong statement (the
check proves what it was given). Lean's reference manual, "Validating a Lean Proof", lists
what each outside tool adds: lean4checker replays compiled `.olean` files in a new process,
Lean's comparator checks the statement against a trusted one, SafeVerify compares a
submission's `.olean` with the target's.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from prover.data.lean_decls import LeanFile
from prover.data.lean_text import mask_non_code
from prover.env.lean_query import added_unsafe, read_answer
from prover.env.lean_query import query as lean_query
from prover.env.proof_text import standalone_proof
from prover.env.repl_revision import KernelReplayUnavailable
from prover.env.text_check import tactic_text_problem
from prover.env.verdict import SOURCE_REPL, Evidence, Verdict, decide

FRESH_PREFIX = "prover_check_"

_DECL = re.compile(r"(?<![\w'!?.])(theorem|lemma|example|def|abbrev)(?![\w'!?])")
_NAME = re.compile(r"\s+(«[^»]*»(?:\.(?:«[^»]*»|[^\s(){}\[\]⦃⦄:,.«]+))*|[^\s(){}\[\]⦃⦄:,«]+)")

Command = Callable[..., dict]  # ReplSession.command(cmd, env=..., timeout=...)
# The kernel replay of an environment: ("", the replayed environment's id) when the kernel
# accepted it, else (why not, None).
Replay = Callable[[int], tuple[str, int | None]]


def fresh_name(statement: str) -> str:
    """A name no library has, the same for the same statement (so a check is reproducible)."""
    return FRESH_PREFIX + hashlib.sha256(statement.encode("utf-8")).hexdigest()[:12]


def restate(statement: str, full_name: str | None = None) -> tuple[str, str]:
    """`statement` with its declaration's name replaced by a fresh one: (text, the full name
    Lean gives it). Everything else stays byte for byte (`... in` prefixes, binders, type); the
    name keeps its namespace prefix (`Nat.foo` -> `Nat.prover_check_…`), since Lean opens that
    namespace inside the signature. `full_name`, the theorem's name as Lean knows it, tells the
    namespaces the header opened around it (`Foo.Nat.foo` declared as `Nat.foo`); without it
    none are assumed, so a check inside an unknown namespace fails, never passes. `example`
    becomes `theorem`. Raises ValueError on text with no declaration keyword."""
    code = mask_non_code(statement)
    m = _DECL.search(code)
    if m is None:
        raise ValueError(f"no theorem, lemma, example or def in the statement {statement[:80]!r}")
    fresh = fresh_name(statement)
    if m.group(1) == "example":
        return statement[:m.start()] + f"theorem {fresh}" + statement[m.end():], fresh
    n = _NAME.match(code, m.end())
    if n is None:
        raise ValueError(f"no name after `{m.group(1)}` in the statement {statement[:80]!r}")
    name = statement[n.start(1):n.end(1)]
    universes = ""
    if name.endswith(".") and statement.startswith("{", n.end(1)):  # `theorem foo.{u}`
        name, universes = name[:-1], "."
    written = name.rsplit(".", 1)[0] + "." if "." in name and not name.startswith("«") else ""
    text = statement[:n.start(1)] + written + fresh + universes + statement[n.end(1):]
    if written.startswith("_root_."):
        return text, written[len("_root_."):] + fresh
    namespace = full_name[:-len(name)] if full_name and full_name.endswith("." + name) else ""
    return text, namespace + written + fresh


# -- the axioms answer, read as Lean writes names ----------------------------------------------

_DEPENDS = "' depends on axioms: ["
_NONE = "' does not depend on any axioms"


def split_name_list(text: str) -> tuple[list[str], bool]:
    """The items of a printed list of names starting after its `[`, cut at commas outside `«»`
    escapes, up to the first `]` outside one: (items, whether the list was closed)."""
    items, cur, escaped = [], [], False
    for c in text:
        if escaped:
            cur.append(c)
            escaped = c != "»"
        elif c == "«":
            cur.append(c)
            escaped = True
        elif c == "," or c == "]":
            item = "".join(cur).strip()
            if item:
                items.append(item)
            cur = []
            if c == "]":
                return items, True
        else:
            cur.append(c)
    return items, False


def _printed_as(printed: str, name: str) -> bool:
    """Whether Lean's printed name is `name`: exactly, or its private form
    (`_private.<module>.0.<name>`, how Lean writes a `private` declaration's name)."""
    if printed == name:
        return True
    return printed.startswith("_private.") and printed.endswith(".0." + name)


def axioms_answer(answer: dict, name: str) -> tuple[str, ...] | str:
    """The axioms `#print axioms NAME` listed for exactly `name` (Lean's format,
    src/Lean/Elab/Print.lean: `'NAME' depends on axioms: [a, b, c]`, the list wrapped over lines
    when long, or `'NAME' does not depend on any axioms`), as printed (escapes kept); or, as a
    string, why no single answer was read (none, several, or a list left open)."""
    found: list[tuple[str, ...] | str] = []
    for m in answer.get("messages", []):
        if m.get("severity") not in ("info", "information"):
            continue
        data = str(m.get("data", ""))
        for start in [i for i in range(len(data)) if data.startswith("'", i)]:
            for marker in (_DEPENDS, _NONE):
                end = data.find(marker, start + 1)
                if end < 0 or not _printed_as(data[start + 1:end], name):
                    continue
                if marker == _NONE:
                    found.append(())
                else:
                    items, closed = split_name_list(data[end + len(marker):])
                    found.append(tuple(items) if closed else "the axioms list is not closed")
    if not found:
        from prover.env.repl_session import error_messages
        errors = error_messages(answer)
        return errors[0] if errors else f"no `depends on axioms` line for {name}"
    if len(found) > 1:
        return f"{len(found)} axioms answers for {name}, not one"
    return found[0]


# -- the REPL's answers as evidence ------------------------------------------------------------

def lean_evidence(ev: Evidence, answer: dict, sorry_warnings: Sequence[str] = (),
                  count_sorries: bool = True) -> Evidence:
    """Lean's answer to the checked command: its errors, goals left as sorries and warnings."""
    from prover.env.repl_session import error_messages
    errors = error_messages(answer)
    if not errors and "env" not in answer:
        errors = [f"Lean gave no environment for the checked proof: {str(answer)[:200]}"]
    return replace(ev, errors=tuple(errors), sorry_warnings=tuple(sorry_warnings),
                   sorries_left=len(answer.get("sorries", [])) if count_sorries else 0)


def check_proof(command: Command, env: int | None, statement: str, tactics: Sequence[str],
                allow_native_decide: bool = False, timeout: float | None = None,
                full_name: str | None = None, replay: Replay | None = None,
                kernel_replay: bool = True, accept_without_kernel: bool = False) -> Verdict:
    """Check found `tactics` as a proof of `statement` in environment `env` (see the module
    docstring). `command` sends one REPL command and returns Lean's answer; `replay` runs the
    kernel replay of an environment (without it, or with `kernel_replay` off, the verdict is
    `unverified` unless `accept_without_kernel`)."""
    from prover.env.repl_session import uses_sorry
    ev = Evidence(SOURCE_REPL, allow_native_decide, text_problem=tactic_text_problem(tactics),
                  text_checked=True, accept_without_kernel=accept_without_kernel)
    if ev.text_problem is not None:
        return decide(ev)
    text, name = restate(statement, full_name)
    answer = command(f"{text} := {standalone_proof(tactics)}", env=env, timeout=timeout)
    ev = lean_evidence(ev, answer, [name] if uses_sorry(answer) else [])
    return _axioms_and_kernel(replace(ev, declarations=(name,)), answer["env"] if "env" in answer else None,
                              command, replay if kernel_replay else None, timeout, name,
                              before_env=env, kernel_off=not kernel_replay)


def _ask(command: Command, env: int | None, names: Sequence[str], timeout: float | None):
    """Lean's answer to the query (`prover.env.lean_query`) in `env`, read; or why not."""
    return read_answer(command(lean_query(names), env=env, timeout=timeout), len(names))


def _axioms_and_kernel(ev: Evidence, env: int | None, command: Command | None, replay: Replay | None,
                       timeout: float | None, label: str | None, before_env: int | None = None,
                       before: dict | None = None, kernel_off: bool = False) -> Verdict:
    """Steps 3 and 4 (see the module docstring), each only while nothing has failed yet.
    `before_env`: the environment the check ran in (its own constants are not the proof's),
    or `before`: that environment's constants already read; neither: an empty one."""
    if _settled(ev, label) or command is None or env is None or not ev.declarations:
        return decide(ev, label)  # decided, or nothing to ask: an example has no name (unverified)
    names = tuple(ev.declarations)
    asked = env
    if kernel_off or replay is None:
        ev = replace(ev, kernel_unavailable="the kernel replay was not run (env.repl.kernel_replay=false)"
                     if kernel_off else "the kernel replay was not run (no replay for this REPL)")
    else:
        try:
            reason, replayed = replay(env)
        except KernelReplayUnavailable as e:
            reason, replayed = None, None
            ev = replace(ev, kernel_unavailable=str(e))
        ev = replace(ev, kernel=reason)
        if reason or (reason is not None and replayed is None):
            return decide(ev, label)
        if replayed is not None:
            asked = replayed
    if ev.kernel is None and not ev.accept_without_kernel:
        return decide(ev, label)  # unverified: no kernel replay, and the user did not accept that
    # The attributes (`@[implemented_by]`, `@[extern]`) live in the checked environment only: the
    # replay carries constants, not attributes. The rest is asked in the replay.
    attributes = _ask(command, env, (), timeout)
    checked = _ask(command, asked, names, timeout)
    if before is None:
        before = _ask(command, before_env, (), timeout) if before_env is not None else ({}, [])
    if isinstance(before, str) and not before.startswith("the file before"):
        before = f"the environment it was checked in: {before}"
    for part in (checked, attributes, before):
        if isinstance(part, str):
            return decide(replace(ev, added=part), label)
    locals_, lean = checked
    ev = replace(ev, added=tuple(added_unsafe(locals_, before[0], attributes[0])),
                 lean_axioms={d: (a if a is not None else f"Lean does not know {d}") for d, a in zip(names, lean)})
    if _settled(ev, label):
        return decide(ev, label)  # Lean's own answer already refuses: no second opinion needed
    printed = {d: axioms_answer(command(f"#print axioms {d}", env=asked, timeout=timeout), d) for d in names}
    return decide(replace(ev, axioms=printed), label)


def _settled(ev: Evidence, name: str | None) -> bool:
    """Whether the evidence so far already decides (a failure): no need to ask Lean more."""
    verdict = decide(ev, name)
    return verdict.missing is None


def sorry_warnings_in(answer: dict, text: str, names: Sequence[str]) -> list[str]:
    """Which of the declarations `names` of the file `text` have a "declaration uses 'sorry'"
    warning inside their own span (Lean places it at the declaration's name)."""
    from prover.env.repl_session import SORRY_WARNING
    scanned = LeanFile.scan(text, "")
    spans = [(d.name, d.start, d.end) for d in scanned.declarations if d.name in set(names)]
    hits: list[str] = []
    for m in answer.get("messages", []):
        if m.get("severity") != "warning" or SORRY_WARNING not in str(m.get("data", "")):
            continue
        pos = m.get("pos") or {}
        at = scanned.index(pos.get("line", 0), pos.get("column", 0))
        for decl, start, end in spans:
            if at is not None and start <= at < end and decl not in hits:
                hits.append(decl)
    return hits


def check_file(run_file: Callable[[Path], dict], command: Command | None, replay: Replay | None,
               path: Path, patched: bytes, decls: Sequence[str | None], tactics: Sequence[Sequence[str]],
               allow_native_decide: bool = False, kernel_replay: bool = True,
               timeout: float | None = None, original: dict | None = None,
               accept_without_kernel: bool = False) -> Verdict:
    """The verdict on proofs patched into a project file (`patched`: the file with them in
    place of their sorries; `decls`: each proof's declaration, None for an example; `tactics`:
    each proof's tactics). See the module docstring: the file elaborates with no error, each
    patched declaration is free of sorry and its axioms are standard, and the kernel replays
    the file's environment. The file is elaborated from a temporary copy beside it (same
    folder, so the same project), removed afterwards. `original`: Lean's answer to the file as
    it is (its sorries in place), whose constants are the file's, not the proofs'; None: the
    file is elaborated for it here."""
    import tempfile
    problem = next((p for p in map(tactic_text_problem, tactics) if p is not None), None)
    ev = Evidence(SOURCE_REPL, allow_native_decide, text_problem=problem, text_checked=True,
                  accept_without_kernel=accept_without_kernel)
    if problem is not None:
        return decide(ev)
    with tempfile.NamedTemporaryFile("wb", suffix=".lean", dir=path.parent, prefix=".prover-check-",
                                     delete=False) as f:
        f.write(patched)
    try:
        answer = run_file(Path(f.name))
    finally:
        Path(f.name).unlink(missing_ok=True)
    named = [d for d in decls if d]
    text = patched.decode("utf-8", errors="replace")
    ev = lean_evidence(ev, answer, sorry_warnings_in(answer, text, named), count_sorries=False)
    ev = replace(ev, declarations=tuple(named) if len(named) == len(decls) else ())
    if _settled(ev, None) or command is None:
        return decide(ev, ", ".join(named) or None)
    if original is None:
        original = run_file(path)
    before = None if "env" in original else "the file before its proofs: Lean gave it no environment"
    return _axioms_and_kernel(ev, answer.get("env"), command, replay if kernel_replay else None, timeout,
                              ", ".join(named) or None, before_env=original.get("env"), before=before,
                              kernel_off=not kernel_replay)
