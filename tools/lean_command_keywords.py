#!/usr/bin/env python3
"""Regenerate the command-starting token lists in prover/env/command_keywords.json.

Scans Lean sources for tokens that can be the first token of a syntax in Lean's
`command` category:

* builtin parsers: ``@[builtin_command_parser] def x := leading_parser ...`` (and
  ``@[command_parser]``); the first atom is found by following the first element of
  the ``>>`` sequence, ``<|>`` alternatives, nullable ``optional``/``many`` items and
  same-file helper definitions (so ``declaration`` yields ``theorem``, ``def``, ...);
* ``syntax``/``macro``/``elab`` declarations ending in ``: command``: the first
  string literal of the declaration's pattern;
* modifiers: the items of ``declModifiers``, ``Term.attrKind`` (``scoped``/``local``),
  ``Term.attributes`` (``@[``) and ``sectionHeader``.

Usage::

    python tools/lean_command_keywords.py --label leanprover/lean4@v4.24.0 ~/.elan/toolchains/X/src/lean \
        --label leanprover-community/mathlib4@v4.24.0 .lake/packages/mathlib [...] \
        [--out prover/env/command_keywords.json] [--replace]

Each ``--label REPO@REF`` names the tree(s) that follow it.  Existing entries are kept
(merged) unless ``--replace``; ``weakening_options`` and ``also_tactic_or_term`` are
always kept as they are.  Tokens listed in ``also_tactic_or_term`` are not added to
``keywords``/``hash_commands``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

STR = r'"((?:[^"\\]|\\.)*)"'
MODS = r"(?:(?:private|protected|partial|noncomputable|meta)\s+)*"
ATTR_RE = re.compile(r"@\[([^\]]*)\]\s*" + MODS + r"def\s+([^\s:(]+)")
DEF_RE = re.compile(r"^(?:@\[[^\]]*\]\s*)?" + MODS + r"(?:def|abbrev)\s+([^\s:(]+)[^\n]*?:=", re.M)
SYNTAX_RE = re.compile(
    r"^[ \t]*(?:@\[[^\]]*\]\s*)?(?:(?:scoped|local|private|public|meta)\s+)*(syntax|macro|elab)(?::\w+)?\s"
    r"((?:(?!^\S)(?!\n[ \t]*(?:@\[[^\]]*\]\s*)?(?:(?:scoped|local|private|public|meta)\s+)*"
    r"(?:syntax|macro|elab|macro_rules|elab_rules|notation|def|theorem|instance)\b)[\s\S]){0,600}?)"
    r"\s:\s*command\b", re.M)
NULLABLE_HEADS = ("optional", "many", "manyIndent", "ppLine", "ppSpace", "ppDedent", "ppIndent",
                  "checkColGt", "checkColGe", "ppGroup", "ppHardLineUnlessUngrouped")
WRAPPERS = ("withPosition", "atomic", "group", "ppDedent", "ppIndent", "ppGroup", "suppressInsideQuot",
            "withOpen", "leading_parser", "recover", "withAntiquot", "incQuotDepth", "withoutPosition",
            "symbol", "nonReservedSymbol", "unicodeSymbol")
MODIFIER_WORDS = {"private", "protected", "public", "noncomputable", "unsafe", "partial", "nonrec", "meta",
                  "scoped", "local", "@["}
MODIFIER_DEFS = ("declModifiers", "attrKind", "attributes", "sectionHeader")


def strip_comments(text: str) -> str:
    out, i, depth, n = [], 0, 0, len(text)
    while i < n:
        if text.startswith("/-", i):
            depth += 1
            i += 2
        elif depth and text.startswith("-/", i):
            depth -= 1
            i += 2
        elif depth:
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] == '"':
            m = re.compile(STR).match(text, i)
            end = m.end() if m else i + 1
            out.append(text[i:end])
            i = end
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def split_top(expr: str, sep: str) -> list[str]:
    parts, depth, cur, i = [], 0, [], 0
    while i < len(expr):
        c = expr[i]
        if c == '"':
            m = re.compile(STR).match(expr, i)
            cur.append(m.group(0) if m else c)
            i = m.end() if m else i + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if depth == 0 and expr.startswith(sep, i):
            parts.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def def_bodies(text: str) -> dict[str, str]:
    """Name -> body text (up to the next top-level def) for every def in a file."""
    starts = [(m.start(), m.end(), m.group(1).strip("«»")) for m in DEF_RE.finditer(text)]
    bodies = {}
    for k, (s, e, name) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
        body = text[e:end]
        nl = body.find("\n")
        stop = re.search(r"^\S", body[nl + 1:], re.M) if nl >= 0 else None  # next unindented line
        bodies[name.split(".")[-1]] = body[: nl + 1 + stop.start()] if stop else body
    return bodies


def first_tokens(expr: str, defs: dict, depth: int = 0) -> tuple[set, bool]:
    """(first atoms, nullable) of a parser expression."""
    expr = expr.strip()
    if depth > 6 or not expr:
        return set(), True
    expr = re.sub(r"^leading_parser(?::\w+)?\s*(?:\([^)]*:=[^)]*\)\s*)?", "", expr).strip()
    alts = split_top(expr, "<|>")
    if len(alts) > 1:
        toks, nul = set(), False
        for a in alts:
            t, n = first_tokens(a, defs, depth + 1)
            toks |= t
            nul |= n
        return toks, nul
    toks = set()
    for item in split_top(expr, ">>"):
        item = re.sub(r"\s*<\|\s*$", "", item).strip()
        if item.endswith("<|"):
            item = item[:-2].strip()
        pipe = re.search(r"<\|(?!>)", item)
        if pipe and not item.startswith("("):
            item = item[pipe.end():].strip()
        while item.startswith("(") and item.endswith(")") and len(split_top(item[1:-1], "\0")) == 1:
            item = item[1:-1].strip()
        if len(split_top(item, "<|>")) > 1:
            t, n = first_tokens(item, defs, depth + 1)
            toks |= t
            if not n:
                return toks, False
            continue
        m = re.match(r"^" + STR, item)
        if m:
            toks.add(m.group(1).strip())
            return toks, False
        head = re.match(r"^([\w.«»']+)\s*(.*)$", item, re.S)
        if not head:
            return toks, False
        name, rest = head.group(1).strip("«»"), head.group(2).strip()
        short = name.split(".")[-1].strip("«»")
        if name in NULLABLE_HEADS or short in ("optional", "many"):
            if rest:
                t, _ = first_tokens(rest, defs, depth + 1)
                toks |= t
            continue
        if short in ("docComment", "plainDocComment", "skip", "attrKind") or name.startswith(("pp", "check")):
            continue
        if short in WRAPPERS:
            rest = re.sub(r"^\([^()]*:=[^()]*\)\s*", "", rest)
            t, n = first_tokens(rest, defs, depth + 1)
            toks |= t
            if not n:
                return toks, False
            continue
        if short in defs and short not in ("ident", "termParser", "commandParser"):
            t, n = first_tokens(defs[short], defs, depth + 1)
            toks |= t
            if not n:
                return toks, False
            continue
        return toks, False  # ident, termParser, unknown: not a fixed token
    return toks, True


def modifier_tokens(defs: dict) -> set:
    out = set()
    for name in MODIFIER_DEFS:
        if name in defs:
            for item in split_top(re.sub(r"^leading_parser\S*", "", defs[name].strip()), ">>"):
                out |= first_tokens(item, defs)[0]
    return out


def scan_file(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            text = strip_comments(f.read())
    except (OSError, UnicodeDecodeError):
        return set(), set()
    cmds, mods = set(), set()
    if "command_parser" in text or "declModifiers" in text or "attrKind" in text:
        defs = def_bodies(text)
        for m in ATTR_RE.finditer(text):
            attrs = [a.strip().split()[0] for a in m.group(1).split(",") if a.strip()]
            if {"builtin_command_parser", "command_parser"} & set(attrs):
                name = m.group(2).strip("«»").split(".")[-1]
                if name in defs and "trailing_parser" not in defs[name][:40]:
                    cmds |= first_tokens(defs[name], defs)[0]
        mods |= modifier_tokens(defs)
    for m in SYNTAX_RE.finditer(text):
        head = re.sub(r"\((?:name|priority|kind)\s*:=[^)]*\)", " ", m.group(2))
        head = re.sub(r"^\s*:\s*\w+", " ", head)  # precedence `syntax:arg`
        s = re.search(STR, head)
        if s and s.group(1).strip():
            cmds.add(s.group(1).strip())
    return cmds - mods, mods


def scan_tree(root: str):
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".lake", "build", "tests", "test")
                       and not d.endswith("Test")]
        for fn in files:
            if fn.endswith(".lean"):
                p = os.path.join(dirpath, fn)
                yield os.path.relpath(p, root), scan_file(p)


def parse_args(argv):
    """`--label REPO@REF` applies to the tree paths after it (argparse cannot interleave them)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trees", nargs="*", metavar="[--label REPO@REF] TREE")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "prover", "env",
                                                  "command_keywords.json"))
    ap.add_argument("--replace", action="store_true", help="drop existing keyword entries first")
    ap.add_argument("--label", action="append", default=[], help=argparse.SUPPRESS)
    args, label, todo, i = ap.parse_args([a for a in argv if a in ("-h", "--help")]), None, [], 0
    while i < len(argv):
        if argv[i] in ("--label", "--out") and i + 1 < len(argv):
            if argv[i] == "--label":
                label = argv[i + 1]
            else:
                args.out = argv[i + 1]
            i += 2
            continue
        if argv[i] == "--replace":
            args.replace = True
        else:
            todo.append((label or os.path.basename(os.path.abspath(argv[i])), argv[i]))
        i += 1
    if not todo:
        ap.error("no source tree given")
    return args, todo


def main(argv=None):
    args, todo = parse_args(list(argv if argv is not None else sys.argv[1:]))
    data = {}
    if os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as f:
            data = json.load(f)
    skip = {e["token"] for e in data.get("also_tactic_or_term", []) if isinstance(e, dict)}
    for key in ("keywords", "hash_commands", "modifiers"):
        if args.replace or key not in data:
            data[key] = {}
    sources = {} if args.replace else {(s["repo"], s["ref"]): s for s in data.get("sources", [])}
    for label, root in todo:
        repo, _, ref = label.partition("@")
        src = sources.setdefault((repo, ref), {"repo": repo, "ref": ref, "files": []})
        for rel, (cmds, mods) in scan_tree(root):
            if not cmds and not mods:
                continue
            src["files"] = sorted(set(src["files"]) | {rel})
            where = f"{label}:{rel}"
            for tok in {c.split()[0] for c in cmds if c.split()}:
                if not tok or tok.startswith("/-"):
                    continue
                key = ("modifiers" if tok in MODIFIER_WORDS else
                       "hash_commands" if tok.startswith("#") else "keywords")
                if key != "modifiers" and tok in skip:
                    continue
                data[key].setdefault(tok, [])
                if where not in data[key][tok]:
                    data[key][tok].append(where)
            for tok in mods:
                data["modifiers"].setdefault(tok, [])
                if where not in data["modifiers"][tok]:
                    data["modifiers"][tok].append(where)
    data["sources"] = list(sources.values())
    for key in ("keywords", "hash_commands", "modifiers"):
        data[key] = dict(sorted(data[key].items()))
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{args.out}: {len(data['keywords'])} keywords, {len(data['hash_commands'])} hash commands, "
          f"{len(data['modifiers'])} modifiers")


if __name__ == "__main__":
    main()
