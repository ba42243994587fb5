"""When a found proof counts: the one check that every path counting or writing a proof goes through.

Search runs tactics one at a time in the REPL's tactic mode, and "no goals left" there is not a
proof (REPL issue #44; a tactic can also close a goal that is not the theorem's). A proof
counts only when all of this holds, in this order (cheapest first):

1. Its text cannot leave its proof (`tactic_text_problem`, before Lean sees it). A line cannot
   dedent out of the `by` block: `prover.env.proof_text` shifts every line of a tactic to the
   block's column. What remains is a command keyword (`axiom`, `theorem`, `@[...]`, `#eval`,
   ...): where the tactic parser stops, the `by` block ends and Lean reads the rest as a new
   command, on the same line or the next (`exact h axiom cheat : False`), so such a keyword
   anywhere in the tactic's code (comments and strings aside) refuses it.
2. Lean proves the asked statement under a fresh name (`restate`): the statement the theorem
   was opened with, its text identical but for the declaration's name (`example` becomes
   `theorem`), `:=` the found tactics as one `by` block, in the environment the theorem was
   opened in, with no error, no `sorry` warning and no sorry left.
3. `#print axioms` of that fresh name lists only Lean's standard axioms, `propext`,
   `Classical.choice` and `Quot.sound` (the three SafeVerify and Lean's reference manual,
   "Validating a Lean Proof", accept). `sorryAx` and any other axiom reject the proof;
   `Lean.ofReduceBool` and `Lean.trustCompiler` (what `native_decide` adds: they trust the
   compiler) reject it unless `allow_native_decide` is set, and every verdict records which
   setting was in force.

What this guarantees, and what not: it is built for an honest search (a generator proposing
tactics, not an adversary). It stops a proof of another goal, a proof that uses `sorry`, an
axiom declared by text that escapes the proof, an unsound axiom a tactic adds and the proof
uses, and `native_decide` unless allowed. It does not replay the environment in a fresh
kernel (`lean4checker`, SafeVerify's `Environment.replay`), so a tactic that runs arbitrary
meta-code (`run_tac`, an `elab` in the header) and tampers with the environment or with how
`#print axioms` answers is not stopped: results from a malicious generator need those tools.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prover.data.lean_text import mask_non_code
from prover.env.proof_text import standalone_proof

STANDARD_AXIOMS = ("propext", "Classical.choice", "Quot.sound")
# What `native_decide` (and `decide +kernel`'s compiled relatives) add: trust in the compiler.
NATIVE_AXIOMS = ("Lean.ofReduceBool", "Lean.trustCompiler")
FRESH_PREFIX = "prover_check_"

# Words that start a command: at the start of a line of a proof they end the `by` block (or fail).
_COMMAND_WORDS = (
    "axiom", "axioms", "theorem", "lemma", "def", "abbrev", "instance", "example", "opaque",
    "structure", "class", "inductive", "coinductive", "namespace", "section", "end", "universe",
    "variable", "import", "mutual", "macro", "macro_rules", "syntax", "elab", "elab_rules",
    "notation", "infix", "infixl", "infixr", "prefix", "postfix", "attribute", "initialize",
    "builtin_initialize", "private", "protected", "noncomputable", "unsafe", "partial", "nonrec",
    "deriving", "declare_syntax_cat", "add_decl_doc", "export", "omit", "include", "termination_by",
    "decreasing_by", "where")
# `#` commands by name: `#s` alone is Mathlib's cardinality notation, not a command.
_HASH_COMMANDS = ("eval", "print", "check", "reduce", "exit", "guard", "guard_msgs", "synth", "help",
                  "lint", "find", "simp", "norm_num", "conv", "where", "time", "exit", "check_failure")
_COMMAND = re.compile(r"(?<![\w'!?.«#])(?:#(?:" + "|".join(_HASH_COMMANDS) + r")(?![\w'])|@\[|(?:"
                      + "|".join(_COMMAND_WORDS) + r")(?![\w'!?.»]))")
_DECL = re.compile(r"(?<![\w'!?.])(theorem|lemma|example|def|abbrev)(?![\w'!?])")
_NAME = re.compile(r"\s+(«[^»]*»(?:\.(?:«[^»]*»|[^\s(){}\[\]⦃⦄:,.«]+))*|[^\s(){}\[\]⦃⦄:,«]+)")
_AXIOMS = re.compile(r"'(?P<name>[^']*)'\s+(?:depends\s+on\s+axioms:\s*\[(?P<list>[^\]]*)\]"
                     r"|does\s+not\s+depend\s+on\s+any\s+axioms)")


@dataclass(frozen=True)
class Verdict:
    """A proof's check: `ok`, or why not; the axioms Lean listed and the native setting in force."""

    ok: bool
    reason: str | None = None
    axioms: tuple[str, ...] = ()
    native_decide_allowed: bool = False
    name: str | None = None  # the fresh name the statement was proved under

    def to_json(self) -> dict:
        return {"ok": self.ok, "reason": self.reason, "axioms": list(self.axioms),
                "native_decide_allowed": self.native_decide_allowed, "name": self.name}


def tactic_text_problem(tactics: Sequence[str]) -> str | None:
    """Why this tactic text could leave the `by` block it is placed in, or None: it holds a
    command keyword, where Lean would end the proof and read a command (see the module
    docstring). Every line of a tactic is placed at the block's column or right of it, so no
    line dedents out; a carriage return alone is refused, since the layout counts `\n` only."""
    for tac in tactics:
        text = tac.replace("\r\n", "\n")
        if "\r" in text:
            return "the tactic holds a carriage return, which the proof's layout does not count as a line"
        code = mask_non_code(text)
        m = _COMMAND.search(code)
        if m is not None:
            line = text[text.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0].strip()
            return f"the tactic holds the command keyword `{m.group()}`, which would end the proof: {line[:80]!r}"
    return None


def fresh_name(statement: str) -> str:
    """A name no library has, the same for the same statement (so a check is reproducible)."""
    return FRESH_PREFIX + hashlib.sha256(statement.encode("utf-8")).hexdigest()[:12]


def restate(statement: str) -> tuple[str, str]:
    """`statement` with its declaration's name replaced by a fresh one: (text, name to print).
    Everything else stays byte for byte (`... in` prefixes, binders, type); the name keeps
    its namespace prefix (`Nat.foo` -> `Nat.prover_check_…`), since Lean opens that namespace
    inside the signature. `example` becomes `theorem`. Raises ValueError on text with no
    declaration keyword."""
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
    prefix = name.rsplit(".", 1)[0] + "." if "." in name and not name.startswith("«") else ""
    full = prefix + fresh
    return statement[:n.start(1)] + full + universes + statement[n.end(1):], full


def parse_axioms(answer: dict, name: str) -> tuple[str, ...] | None:
    """The axioms `#print axioms NAME` listed in a REPL answer, or None when it holds no such
    line for a name ending in `name`'s last component. Lean's format (src/Lean/Elab/Print.lean):
    `'NAME' depends on axioms: [a, b, c]` or `'NAME' does not depend on any axioms`, the list
    broken over lines (and indented) when it is long."""
    last = name.rsplit(".", 1)[-1]
    for m in answer.get("messages", []):
        if m.get("severity") not in ("info", "information"):
            continue
        for hit in _AXIOMS.finditer(str(m.get("data", ""))):
            printed = hit.group("name").replace("«", "").replace("»", "")
            if printed != last and not printed.endswith("." + last):
                continue
            items = hit.group("list")
            if items is None:
                return ()
            return tuple(a.strip().replace("«", "").replace("»", "") for a in items.split(",") if a.strip())
    return None


def axioms_problem(axioms: Sequence[str], allow_native_decide: bool) -> str | None:
    """Why these axioms reject a proof, or None."""
    allowed = STANDARD_AXIOMS + (NATIVE_AXIOMS if allow_native_decide else ())
    bad = [a for a in axioms if a not in allowed]
    if not bad:
        return None
    if "sorryAx" in bad:
        return "the proof depends on sorryAx"
    native = [a for a in bad if a in NATIVE_AXIOMS]
    if native and len(native) == len(bad):
        return (f"the proof depends on {', '.join(native)} (native_decide): not allowed "
                f"(env.repl.allow_native_decide=false)")
    return f"the proof depends on axioms beyond Lean's standard ones: {', '.join(bad)}"


Command = Callable[..., dict]  # ReplSession.command(cmd, env=..., timeout=...)


def check_proof(command: Command, env: int | None, statement: str, tactics: Sequence[str],
                allow_native_decide: bool = False, timeout: float | None = None) -> Verdict:
    """Check found `tactics` as a proof of `statement` in environment `env` (see the module
    docstring). `command` sends one REPL command and returns Lean's answer."""
    from prover.env.repl_session import error_messages, uses_sorry
    native = allow_native_decide
    problem = tactic_text_problem(tactics)
    if problem is not None:
        return Verdict(False, problem, native_decide_allowed=native)
    text, name = restate(statement)
    answer = command(f"{text} := {standalone_proof(tactics)}", env=env, timeout=timeout)
    errors = error_messages(answer)
    if errors:
        return Verdict(False, errors[0], native_decide_allowed=native, name=name)
    if uses_sorry(answer) or answer.get("sorries"):
        return Verdict(False, "the proof uses sorry", native_decide_allowed=native, name=name)
    if "env" not in answer:
        return Verdict(False, f"Lean gave no environment for the checked proof: {answer}",
                       native_decide_allowed=native, name=name)
    return axioms_verdict(command(f"#print axioms {name}", env=answer["env"], timeout=timeout), name,
                          native)


def axioms_verdict(answer: dict, name: str, allow_native_decide: bool,
                   also_allowed: Sequence[str] = ()) -> Verdict:
    """The verdict of `#print axioms NAME`'s answer."""
    axioms = parse_axioms(answer, name)
    if axioms is None:
        from prover.env.repl_session import error_messages
        errors = error_messages(answer)
        why = errors[0] if errors else "no `depends on axioms` line"
        return Verdict(False, f"#print axioms {name}: {why}", native_decide_allowed=allow_native_decide,
                       name=name)
    problem = axioms_problem([a for a in axioms if a not in also_allowed], allow_native_decide)
    return Verdict(problem is None, problem, axioms, allow_native_decide, name)
