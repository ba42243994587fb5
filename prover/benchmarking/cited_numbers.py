"""The rule that ties the numbers in README.md and docs/*.md to the results files.

Every number on a page is checked: each decimal (`37.6`, `-3.5`, `+1.4`; not versions like
4.20.0) and each integer with a unit (`62 s`, `2,675 steps`, `48 CPU-min`, `35 %`; `UNITS`).
Each must be one of three things:

1. From a results file named on its line or in its section (a Markdown heading or a line that
   opens with a bold lead-in starts a section): the number must be
   among those the index row (benchmarks/results/README.md), the Markdown or the JSON
   (benchmarks/results/STEM.md, .json) of a named file shows, or a named training record
   (benchmarks/results/training/NAME.json, .jsonl or .log) holds. A file is named by `STEM.md` or
   `STEM.json`, with or without `benchmarks/results/`, and may be shortened as the pages do:
   `...-random-test-cpu.md` (`...` stands for any part of a name) or `...-ra{-s1000,,-long}.md`
   (each alternative).
2. In a Markdown table right after a `<!-- results -->` line: one of the numbers of the files
   the table or the marker (`<!-- results: FILE.md FILE.md -->`) names; a table that names none
   draws on the index's headline section (the shipped system's rows).
3. Marked as not a result: `<!-- numbers: literature -->` (a published number, named beside
   it) or `<!-- numbers: code -->` (a plain fact of the code, a config or the data: a default,
   a limit, a size). The marker at the end of a line covers that line; on a line of its own it
   covers the block below it, up to the next blank line (a paragraph, a list, a table).

Signs count (`−` is read as `-`, a leading `+` is dropped, thousands commas are dropped); the
digits must match as written, or as the file's number rounded to fewer decimals (44.217 may be
quoted as 44.2, 302.7 s as 303 s). Fenced code blocks are not read.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

UNITS = (r"%|×|s|ms|min|minutes?|seconds?|hours?|h|CPU-min\w*|CPU-s|CPU-hours?|GiB|MiB|GB|MB|KB|"
         r"steps?|epochs?|nats|points?|pts|tactics/s|states/s")
_INT = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
_NUMBER = re.compile(r"(?<![\w.])[-+−]?(?:\d+\.\d+(?![.\w])|" + _INT + r"(?=\s?(?:" + UNITS + r")(?![\w-])))")
_ANY = re.compile(r"(?<![\w.])[-+−]?(?:\d+\.\d+|\d+)(?![.\d])")
_MARKER = re.compile(r"^\s*<!--\s*results\b(.*?)-->")
_NOT_A_RESULT = re.compile(r"<!--\s*numbers:\s*(literature|code)\s*-->")
_SECTION = re.compile(r"^(#|\*\*)")
HEADLINE = "headline"


def _normal(raw: str) -> str:
    n = raw.replace("−", "-").lstrip("+").replace(",", "")
    return n[1:] if n.startswith("-") and float(n) == 0 else n


def numbers(text: str) -> list[str]:
    """The numbers the rule checks in `text` (decimals, integers with a unit), normalised."""
    return [_normal(raw) for raw in _NUMBER.findall(text)]


def _roundings(n: str) -> set[str]:
    """`n` and `n` rounded to each coarser precision (44.217: 44.22, 44.2, 44)."""
    digits = len(n.split(".")[1]) if "." in n else 0
    out = {n}
    for d in range(digits):
        r = f"{round(float(n), d):.{d}f}"
        out.add(r[1:] if r.startswith("-") and float(r) == 0 else r)
    return out


def all_numbers(text: str) -> set[str]:
    """Every number in `text`, with or without a unit, and its roundings: what a results file
    shows, and what a page may quote of it at a coarser precision."""
    return {r for raw in _ANY.findall(text) for r in _roundings(_normal(raw))}


def index_numbers(index_text: str) -> dict[str, set[str]]:
    """stem -> the numbers in its index row; HEADLINE -> the numbers of the headline section."""
    out: dict[str, set[str]] = {HEADLINE: set()}
    section = ""
    for line in index_text.splitlines():
        if line.startswith("## "):
            section = line
        m = re.match(r"^\| \[([^\]]+)\]\(", line)
        if m:  # a file's row: its own numbers (the link's name holds none)
            out.setdefault(m[1], set()).update(all_numbers(line[m.end():]))
        if section.startswith("## Headline") and line.startswith("|"):
            out[HEADLINE].update(all_numbers(line))
    return out


def with_markdown(index: dict[str, set[str]], results: Path) -> dict[str, set[str]]:
    """`index` with each file's own numbers added (its Markdown tables and its JSON record), and the
    committed training records (results/training/NAME.json, .jsonl, .log) as files of their own."""
    out = dict(index)
    for stem in set(index) - {HEADLINE}:
        for own in (results / f"{stem}.md", results / f"{stem}.json"):
            if own.exists():
                out[stem] = out[stem] | all_numbers(own.read_text())
    for record in sorted((results / "training").glob("*")) if (results / "training").is_dir() else []:
        out.setdefault(record.name.split(".")[0], set()).update(all_numbers(record.read_text()))
    return out


def _expand(name: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", name)
    if not m:
        return [name]
    return [x for alt in m[1].split(",") for x in _expand(name[:m.start()] + alt + name[m.end():])]


def cited(text: str, stems: set[str]) -> list[str]:
    """Results files named in `text` as STEM.md or STEM.json (shortened forms included)."""
    out = []
    for name in re.findall(r"([\w@.+{},*-]+)\.(?:md|json|jsonl|log)\b", text):
        for n in _expand(name):
            if "..." in n or "*" in n:  # each "..." or "*" stands for any part of a name
                pattern = re.compile(".*".join(re.escape(part) for part in re.split(r"\.\.\.|\*", n)))
                out += sorted(s for s in stems if pattern.fullmatch(s))
            elif n in stems:
                out.append(n)
    return list(dict.fromkeys(out))


def _unknown(found: list[str], allowed: set[str]) -> list[str]:
    return [n for n in found if n not in allowed]


def _sections(lines: list[str], stems: set[str]) -> list[list[str]]:
    """For each line, the results files its section names."""
    bounds = sorted({0, len(lines), *(i for i, line in enumerate(lines) if _SECTION.match(line))})
    out: list[list[str]] = [[] for _ in lines]
    for start, end in zip(bounds, bounds[1:]):
        files = cited("\n".join(lines[start:end]), stems)
        for i in range(start, end):
            out[i] = files
    return out


def _not_results(lines: list[str]) -> set[int]:
    """Lines a `<!-- numbers: ... -->` marker covers."""
    out: set[int] = set()
    for i, line in enumerate(lines):
        if not _NOT_A_RESULT.search(line):
            continue
        if _NOT_A_RESULT.sub("", line).strip():  # at the end of a line: that line
            out.add(i)
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip():
            out.add(j)
            j += 1
    return out


def violations(doc: str, index: dict[str, set[str]], name: str = "doc") -> list[str]:
    """One message per number that breaks the rule in `doc`."""
    stems = set(index) - {HEADLINE}
    lines = doc.splitlines()
    sections = _sections(lines, stems)
    exempt = _not_results(lines)
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
        elif not in_code and i not in exempt and (found := numbers(line)):
            here = cited(line, stems)
            files = list(dict.fromkeys(here + sections[i]))
            if not files:
                out += [f"{name}:{i + 1}: {n} names no results file on its line or in its section, "
                        "and is not marked `<!-- numbers: literature -->` or `<!-- numbers: code -->`"
                        for n in found]
            else:
                allowed = set().union(*(index[s] for s in files))
                where = ", ".join(files) if len(files) <= 3 else f"{', '.join(files[:3])} and {len(files) - 3} more"
                out += [f"{name}:{i + 1}: {n} is not in {'the' if here else 'its section’s'} results file(s) {where}"
                        for n in _unknown(found, allowed)]
        i += 1
    return out


def doc_paths(repo: Path) -> list[Path]:
    """Every page the rule covers: README.md and docs/*.md."""
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def page_violations(repo: Path, index_text: str, results: Path,
                    read: Callable[[Path], str] = lambda p: p.read_text()) -> list[str]:
    """Every violation on every page of `repo`."""
    index = with_markdown(index_numbers(index_text), results)
    return [v for p in doc_paths(repo) if p.exists() for v in violations(read(p), index, str(p.relative_to(repo)))]
