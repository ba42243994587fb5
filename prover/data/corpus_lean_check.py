"""`prover data corpus PROJECT --backend repl`: the source-scanned corpus checked against Lean.

With Lean present, the REPL imports the project's top modules and prints every constant of the
environment that has declaration ranges (`findDeclarationRanges?`): its name, module, kind,
range and selection range (the name's span). Against that list the scanned rows are fixed:

- a constant the scan missed (in a corpus file, not auto-generated) is added, its code sliced
  from the source at Lean's range (`"from_lean": true`);
- a row Lean does not know in a module Lean loaded is removed (the scan invented it: a wrong
  guess of a to_additive name, say);
- a row whose `def_pos` differs from Lean's selection range takes Lean's.

Each is counted in metadata `lean_check` with the first examples. The REPL is injected
(`run_command(cmd) -> answer`) so this is tested on a recorded answer without Lean.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path

from prover.data.lean_decls import LeanFile

log = logging.getLogger(__name__)

RunCommand = Callable[[str], dict]

# Prints one tab-separated line per constant with declaration ranges (Lean 4, v4.8 and later).
LIST_CONSTANTS = """open Lean in
#eval show CoreM Unit from do
  let env ← getEnv
  for (n, c) in env.constants.map₁.toList do
    let some idx := env.getModuleIdxFor? n | continue
    let some r ← findDeclarationRanges? n | continue
    let kind := match c with
      | .thmInfo _ => "theorem" | .defnInfo _ => "def" | .axiomInfo _ => "axiom"
      | .opaqueInfo _ => "opaque" | .inductInfo _ => "inductive" | .ctorInfo _ => "ctor"
      | .recInfo _ => "rec" | .quotInfo _ => "quot"
    IO.println s!"{n}\\t{env.header.moduleNames[idx.toNat]!}\\t{kind}\\t{r.range.pos.line}\\t{r.range.pos.column}\\t{r.range.endPos.line}\\t{r.range.endPos.column}\\t{r.selectionRange.pos.line}\\t{r.selectionRange.pos.column}\\t{r.selectionRange.endPos.line}\\t{r.selectionRange.endPos.column}"
"""
# Names Lean generates for every inductive, structure, match and equation: never premises of a
# LeanDojo corpus.
_GENERATED = re.compile(r"(?:^|\.)(?:rec|recOn|casesOn|noConfusion|noConfusionType|below|brecOn|binductionOn|"
                        r"ibelow|sizeOf_spec|injEq|inj|_sizeOf_\d+|_sizeOf_inst|eq_\d+|eq_def|_unfold|"
                        r"match_\d+|proof_\d+|_auxLemma\.\d+|_cstage\d|_spec_\d+|_closed_\d+)$|\._")
_MAX_EXAMPLES = 20


def check_command(modules: list[str]) -> str:
    """The REPL command: the imports, then the listing."""
    return "".join(f"import {m}\n" for m in modules) + LIST_CONSTANTS


def parse_constants(answer: dict) -> list[dict]:
    """The constants Lean printed (info messages of the answer), one dict each."""
    out = []
    for msg in answer.get("messages", []):
        if msg.get("severity") != "info":
            continue
        for line in str(msg.get("data", "")).splitlines():
            parts = line.split("\t")
            if len(parts) != 11 or not all(p.isdigit() for p in parts[3:]):
                continue
            v = [int(p) for p in parts[3:]]
            out.append({"name": parts[0], "module": parts[1], "kind": parts[2], "range": (v[0], v[1], v[2], v[3]),
                        "selection": (v[4], v[5], v[6], v[7])})
    return out


def top_modules(rows: list[dict], module_of: dict[str, str]) -> list[str]:
    """Modules no other corpus file imports: importing them loads the whole corpus."""
    imported = {p for r in rows for p in r["imports"]}
    return [module_of[r["path"]] for r in rows if r["path"] not in imported]


def check_rows(rows: list[dict], constants: list[dict], module_of: dict[str, str],
               read: Callable[[str], LeanFile | None]) -> dict:
    """Fix `rows` in place against Lean's `constants`; returns the `lean_check` counts.
    `module_of`: corpus path -> module; `read(path)`: the scanned file (for code slices)."""
    path_of = {m: p for p, m in module_of.items()}
    lean: dict[tuple[str, str], dict] = {}
    for c in constants:
        if c["kind"] in ("rec", "quot") or _GENERATED.search(c["name"]) or c["module"] not in path_of:
            continue
        lean[(path_of[c["module"]], c["name"])] = c
    loaded = {path_of[c["module"]] for c in constants if c["module"] in path_of}
    stats = {"constants": len(constants), "constants_in_corpus": len(lean), "missed_added": 0,
             "invented_removed": 0, "def_pos_fixed": 0, "files_not_loaded": 0}
    examples: dict[str, list[str]] = {"missed_added": [], "invented_removed": [], "def_pos_fixed": []}

    def note(what: str, name: str) -> None:
        stats[what] += 1
        if len(examples[what]) < _MAX_EXAMPLES:
            examples[what].append(name)

    for row in rows:
        path = row["path"]
        if path not in loaded:
            stats["files_not_loaded"] += 1
            continue
        kept = []
        have = set()
        for p in row["premises"]:
            c = lean.get((path, p["full_name"]))
            if c is None:
                note("invented_removed", p["full_name"])
                continue
            have.add(p["full_name"])
            sel = [[c["selection"][0], c["selection"][1] + 1], [c["selection"][2], c["selection"][3] + 1]]
            if p.get("def_pos") != sel[0]:
                note("def_pos_fixed", p["full_name"])
                p["def_pos"], p["def_end_pos"] = sel
            kept.append(p)
        f = None
        for (cpath, name), c in lean.items():
            if cpath != path or name in have:
                continue
            f = f or read(path)
            kept.append(_row_from_lean(c, f))
            note("missed_added", name)
        kept.sort(key=lambda p: (tuple(p["start"]), tuple(p.get("def_pos") or p["start"])))
        row["premises"] = kept
    stats["examples"] = examples
    return stats


def _row_from_lean(c: dict, f: LeanFile | None) -> dict:
    l0, c0, l1, c1 = c["range"]
    code = ""
    if f is not None:
        i, j = f.index(l0, c0), f.index(l1, c1)
        if i is not None and j is not None:
            code = f.text[i:j]
    return {"full_name": c["name"], "code": code, "start": [l0, c0 + 1], "end": [l1, c1 + 1],
            "kind": c["kind"], "def_pos": [c["selection"][0], c["selection"][1] + 1],
            "def_end_pos": [c["selection"][2], c["selection"][3] + 1], "from_lean": True}


def lean_check(rows: list[dict], module_of: dict[str, str], disk_of: dict[str, Path],
               run_command: RunCommand) -> dict:
    """Ask Lean (through `run_command`) for its constants and fix `rows` against them."""
    answer = run_command(check_command(top_modules(rows, module_of)))
    errors = [m.get("data", "") for m in answer.get("messages", []) if m.get("severity") == "error"]
    if "message" in answer or errors:
        raise RuntimeError(f"Lean could not list the constants: {(answer.get('message') or errors[0])[:300]}")
    constants = parse_constants(answer)

    def read(path: str) -> LeanFile | None:
        try:
            return LeanFile.scan(disk_of[path].read_text(encoding="utf-8"), path)
        except (OSError, UnicodeDecodeError, KeyError):
            return None

    return check_rows(rows, constants, module_of, read)
