"""Lean asked about an environment in a form read without parsing names: JSON it prints itself.

`#print axioms` prints names as `Name.toString` writes them, and `Name.escapePart` gives up on a
part holding `»` (and on inaccessible names `a✝` and macro scopes), printing it raw: an axiom
named `]»` makes the printed list read `[]»]`, which a reader of the text takes for `[]`. So the
verdict is decided on what Lean itself answers to one `#eval` (`query`), run in the environment
asked about, that prints one line: a marker, then JSON of

- `locals`: every constant of the environment's own part (`env.constants.map₂`: added since
  its imports) with what makes it one no kernel check makes safe: its kind is `axiom` or
  `opaque`, or it is a `partial` or `unsafe` definition (`ConstantInfo`'s kind and safety), or
  it has `@[implemented_by]` or `@[extern]` (Lean.Compiler's `implementedByAttr`, `isExtern`);
- `axioms`: for each name asked, the axioms `Lean.collectAxioms` finds it depends on.

Each name is the array of its components (a string part as a JSON string, a numeric part as a
number), so `«Classical.choice»` (one part) is `["Classical.choice"]`, never Lean's
`["Classical", "choice"]`. The names asked are built in Lean from their components
(`Name.mkStr`/`Name.mkNum`), never from an identifier Lean would have to resolve.

What each list is compared with: SafeVerify (GasStationManager/SafeVerify, Main.lean at
0011c079: `replayFile` throws on `ci.isUnsafe`, and on `ci.isPartial` under
`--disallow-partial`; `checkAxioms` allows only `propext`, `Quot.sound`, `Classical.choice`) and
Lean's comparator (leanprover/comparator, Comparator/Axioms.lean at 00ddb8e1: any `axiomInfo`
reached from a target that is not a legal axiom is "Illegal axiom detected"). The constants
"the proof added" are those of the checked environment's own part that the environment it was
checked in (the header's, or the file before its proofs) did not have.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

MARKER = "prover-lean-query:"
Components = tuple  # str and int parts
UNSAFE_KINDS = ("axiom", "opaque", "partial", "unsafe", "implemented_by", "extern")

# `open ... in` keeps the names short without changing the environment asked about; the marker
# line is the only thing printed. `collectAxioms` of a name the environment lacks is empty, so
# each asked name is first looked up (`contains`): a missing one answers null.
_QUERY = """open Lean Elab Command in
#eval show CommandElabM Unit from do
  let env ← getEnv
  let enc : Name → Json := fun n => Json.arr (n.components.toArray.map fun c =>
    match c with
    | .str _ s => Json.str s
    | .num _ k => toJson k
    | .anonymous => Json.null)
  let flags : Name → ConstantInfo → Array String := fun n ci =>
    let kind := match ci with
      | .axiomInfo _ => #["axiom"]
      | .opaqueInfo _ => #["opaque"]
      | .defnInfo v => (match v.safety with | .«partial» => #["partial"] | _ => #[])
      | _ => #[]
    let kind := if ci.isUnsafe then kind.push "unsafe" else kind
    let kind := if (Compiler.implementedByAttr.getParam? env n).isSome then kind.push "implemented_by" else kind
    if isExtern env n then kind.push "extern" else kind
  let locals := env.constants.map₂.toList.toArray.map fun (n, ci) =>
    Json.arr #[enc n, toJson (flags n ci)]
  let mut axioms : Array Json := #[]
  for n in ([{names}] : List Name) do
    if env.contains n then
      axioms := axioms.push (Json.arr ((← collectAxioms n).map enc))
    else
      axioms := axioms.push Json.null
  logInfo m!"{MARKER}{(Json.mkObj [("locals", Json.arr locals), ("axioms", Json.arr axioms)]).compress}"
"""


def name_components(name: str) -> Components:
    """A name as written (`Nat.«foo.bar».baz`, `_root_` not expected) cut into its components:
    dots outside `«»` separate them, the escapes are removed."""
    parts, cur, escaped = [], [], False
    for c in name:
        if escaped:
            if c == "»":
                escaped = False
            else:
                cur.append(c)
        elif c == "«":
            escaped = True
        elif c == ".":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return tuple(parts)


def _lean_string(s: str) -> str:
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or c == "\x7f":
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def lean_name(components: Components) -> str:
    """A Lean term building the name from its components, resolving nothing."""
    term = "Name.anonymous"
    for p in components:
        term = f"(Name.mkNum {term} {p})" if isinstance(p, int) else f"(Name.mkStr {term} {_lean_string(p)})"
    return term


def query(names: Sequence[str] = ()) -> str:
    """The command that asks Lean (see the module docstring) about the environment it runs in,
    and the axioms of each of `names` (as written, e.g. `Nat.prover_check_…`)."""
    return (_QUERY.replace("{names}", ", ".join(lean_name(name_components(n)) for n in names))
            .replace("{MARKER}", MARKER))


def is_query(cmd: str) -> bool:
    return MARKER in cmd and "collectAxioms" in cmd


def _components(value) -> Components:
    if not isinstance(value, list) or not value or not all(
            isinstance(p, str) or (isinstance(p, int) and not isinstance(p, bool)) for p in value):
        raise ValueError(f"not a name's components: {value!r}")
    return tuple(value)


def read_answer(answer: dict, n_names: int) -> tuple[dict[Components, tuple[str, ...]], list[tuple[Components, ...] | None]] | str:
    """Lean's answer to `query`: (each local constant's components -> what makes it unsafe,
    each asked name's axioms or None where the environment lacks it); or, as a string, why no
    single answer was read (an error, no marker line, two of them, JSON that is not the shape)."""
    lines = [str(m.get("data", "")) for m in answer.get("messages", [])
             if m.get("severity") in ("info", "information") and str(m.get("data", "")).startswith(MARKER)]
    if not lines:
        from prover.env.repl_session import error_messages
        errors = error_messages(answer)
        return f"Lean gave no answer to the query: {errors[0] if errors else 'no line starting ' + MARKER}"
    if len(lines) > 1:
        return f"{len(lines)} answers to the query, not one"
    try:
        data = json.loads(lines[0][len(MARKER):])
        locals_ = {}
        for entry in data["locals"]:
            name, flags = entry
            if not all(f in UNSAFE_KINDS for f in flags):
                raise ValueError(f"unknown flag in {flags!r}")
            locals_[_components(name)] = tuple(flags)
        axioms = [None if a is None else tuple(_components(x) for x in a) for a in data["axioms"]]
    except (ValueError, KeyError, TypeError) as e:
        return f"the query's answer is not the expected JSON ({e})"
    if len(axioms) != n_names:
        return f"the query answered {len(axioms)} axioms lists for {n_names} names"
    return locals_, axioms


def added_unsafe(checked: dict[Components, tuple[str, ...]], before: dict[Components, tuple[str, ...]],
                 attributes: dict[Components, tuple[str, ...]] | None = None) -> list[tuple[Components, str]]:
    """The constants of `checked` that `before` lacks (what the proof added), each with what
    makes it one no kernel check makes safe. `attributes`: the same answer from the environment
    before the replay, where `@[implemented_by]`/`@[extern]` live (the replay carries constants,
    not attributes); its constants are looked at too."""
    out: list[tuple[Components, str]] = []
    merged: dict[Components, set[str]] = {}
    for source in (checked, attributes or {}):
        for name, flags in source.items():
            if name not in before:
                merged.setdefault(name, set()).update(flags)
    for name in sorted(merged, key=lambda n: tuple(map(str, n))):
        for flag in UNSAFE_KINDS:
            if flag in merged[name]:
                out.append((name, flag))
    return out
