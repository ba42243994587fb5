"""The rule that ties numbers in README.md and docs/*.md to the results index.

A decimal number (digits, a point, digits: `37.6`, `-3.5`, `+1.4`; not versions like 4.20.0)
is checked where the prose says it comes from a results file:

1. A line that cites a results file, by its name (`retrieval-mathlib-src-random-test-cpu-steps.md`
   or `.json`, with or without `benchmarks/results/`): each decimal on the line must be one of
   the numbers in the index row of a file the line cites.
2. A Markdown table right after a `<!-- results -->` line (blank lines between are allowed): each
   decimal in the table must be one of the numbers in the index rows of the files the table
   (or the marker, `<!-- results: FILE.md FILE.md -->`) cites; a table that cites none draws on
   the index's headline section (the shipped system's rows).

Signs count (`−` is read as `-`, a leading `+` is dropped); the digits must match as written,
so a number is cited at the precision the index shows. Fenced code blocks are not read.
"""
from __future__ import annotations

import re
from pathlib import Path

_NUMBER = re.compile(r"(?<![\w.])[-+−]?\d+\.\d+(?![.\w])")
_MARKER = re.compile(r"^\s*<!--\s*results\b(.*?)-->")
HEADLINE = "headline"


def numbers(text: str) -> list[str]:
    """Decimals in `text`, normalised: `−` to `-`, no leading `+`, no `-0.0`."""
    out = []
    for raw in _NUMBER.findall(text):
        n = raw.replace("−", "-").lstrip("+")
        out.append(n[1:] if n.startswith("-") and float(n) == 0 else n)
    return out


def index_numbers(index_text: str) -> dict[str, set[str]]:
    """stem -> the numbers in its index row; HEADLINE -> the numbers of the headline section."""
    out: dict[str, set[str]] = {HEADLINE: set()}
    section = ""
    for line in index_text.splitlines():
        if line.startswith("## "):
            section = line
        m = re.match(r"^\| \[([^\]]+)\]\(", line)
        if m:  # a file's row: its own numbers (the link's name holds none)
            out.setdefault(m[1], set()).update(numbers(line[m.end():]))
        if section.startswith("## Headline") and line.startswith("|"):
            out[HEADLINE].update(numbers(line))
    return out


def cited(text: str, stems: set[str]) -> list[str]:
    """Results files named in `text` as STEM.md or STEM.json."""
    return [s for s in re.findall(r"([\w@.+-]+)\.(?:md|json)\b", text) if s in stems]


def _unknown(found: list[str], allowed: set[str]) -> list[str]:
    return [n for n in found if n not in allowed]


def violations(doc: str, index: dict[str, set[str]], name: str = "doc") -> list[str]:
    """One message per number that breaks the rule in `doc`."""
    stems = set(index) - {HEADLINE}
    lines = doc.splitlines()
    out: list[str] = []
    in_code = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code and (m := _MARKER.match(line)):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            table = []
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                table.append((j, lines[j]))
                j += 1
            files = cited(m[1] + "\n" + "\n".join(t for _, t in table), stems)
            allowed = set().union(*(index[s] for s in files)) if files else index[HEADLINE]
            where = ", ".join(files) or "the index's headline section"
            for j_line, text in table:
                out += [f"{name}:{j_line + 1}: {n} (a `<!-- results -->` table) is not in {where}"
                        for n in _unknown(numbers(text), allowed)]
            i = j
            continue
        elif not in_code and (files := cited(line, stems)):
            allowed = set().union(*(index[s] for s in files))
            out += [f"{name}:{i + 1}: {n} is not in the index row of {', '.join(files)}"
                    for n in _unknown(numbers(line), allowed)]
        i += 1
    return out


def doc_paths(repo: Path) -> list[Path]:
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]
