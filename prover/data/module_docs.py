"""A Lean file's module docstrings (`/-! ... -/`) and the aliases they give its declarations (issue 63).

Mathlib says in words what a file proves at its top: `/-! # <Title> ... ## Main statements *
`<declaration>` : <what it is called> -/`. Theorems known by a name (Schur's lemma, the
Hahn-Banach theorem) are mostly named there, not in their own docstrings. `prover data corpus`
keeps each file's module docstrings (`module_docs` in its row); `aliases` reads them: each bullet
of a "Main results / Main statements / Main theorems / Main definitions / Main declarations"
section gives the declarations it names (in backticks, resolved among the file's own premises)
the bullet's words, and the file's title (its first `#` heading) is every declaration's weaker
alias (`title`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from prover.data.lean_text import _block_comment_end, _string_end

_SECTION = re.compile(r"^\s*#+\s*(main\s+(?:results?|statements?|theorems?|definitions?|declarations?|"
                      r"constructions?|lemmas?)|(?:the\s+)?main\s+\w+)\s*$", re.I)
_HEADING = re.compile(r"^\s*#+\s*(.*?)\s*#*\s*$")
_TITLE = re.compile(r"^\s*#(?!#)\s*(.+?)\s*$")
_BULLET = re.compile(r"^\s*[*\-+]\s+(.*)$")
_TICKED = re.compile(r"`([^`]+)`")
_IDENT = re.compile(r"^[^\s\d(){}\[\]`,:][^\s(){}\[\]`,:]*$")


def module_docs(text: str) -> list[str]:
    """The file's module docstrings (`/-! ... -/`), in order, inner text with trailing spaces
    dropped (Markdown's lines kept: headings and bullets are read from them)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/-", i):
            j = _block_comment_end(text, i)
            if text.startswith("/-!", i):
                body = text[i + 3:max(i + 3, j - 2)]
                out.append("\n".join(line.rstrip() for line in body.strip("\n").splitlines()).strip())
            i = j
        elif c == '"':
            i = _string_end(text, i + 1)
        else:
            i += 1
    return [d for d in out if d]


def title(docs: Sequence[str]) -> str:
    """The file's title: the first level-one heading of its module docs, "" without one."""
    for d in docs:
        for line in d.splitlines():
            m = _TITLE.match(line)
            if m:
                return _plain(m.group(1))
    return ""


def _plain(text: str) -> str:
    """Markdown and backticks dropped, whitespace collapsed."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [words](link) -> words
    return " ".join(text.replace("`", " ").replace("*", " ").replace("_", " ").split())


def bullets(docs: Sequence[str]) -> list[tuple[list[str], str]]:
    """The bullets of the "Main ..." sections: (the names in backticks, the bullet's other
    words). A bullet's continuation lines join it; a heading or a blank line after a bullet
    ends the section's current bullet."""
    out: list[tuple[list[str], str]] = []
    for d in docs:
        inside = False
        current: list[str] | None = None
        for line in d.splitlines() + [""]:
            if _HEADING.match(line) and line.lstrip().startswith("#"):
                if current:
                    out.append(_bullet(" ".join(current)))
                current = None
                inside = bool(_SECTION.match(line))
                continue
            if not inside:
                continue
            m = _BULLET.match(line)
            if m:
                if current:
                    out.append(_bullet(" ".join(current)))
                current = [m.group(1)]
            elif line.strip() and current is not None and line.startswith((" ", "\t")):
                current.append(line.strip())
            elif not line.strip() and current:
                out.append(_bullet(" ".join(current)))
                current = None
    return [b for b in out if b[0] and b[1]]


def _bullet(text: str) -> tuple[list[str], str]:
    """A bullet's names: those in backticks before its first colon outside backticks (`* `foo`,
    `bar` : words`), or all of them when it has none; its words: the whole bullet, plain."""
    masked = _TICKED.sub(lambda m: "x" * len(m.group(0)), text)
    colon = masked.find(":")
    head = text[:colon] if colon >= 0 else text
    names = [t.strip() for t in _TICKED.findall(head) if _IDENT.match(t.strip())]
    return names, _plain(text).strip(" :-–—.,;")


def resolve(name: str, full_names: Sequence[str]) -> list[str]:
    """The file's premises a bullet's name means: the same full name, or one that ends in
    `.name` (bullets write names relative to the file's namespaces)."""
    name = name.lstrip("@").removeprefix("_root_.")
    return [f for f in full_names if f == name or f.endswith("." + name)]


def aliases(docs: Sequence[str], full_names: Sequence[str]) -> tuple[dict[str, list[str]], str]:
    """Full name -> the bullets' words naming it, and the file's title (every premise's weaker
    alias)."""
    out: dict[str, list[str]] = {}
    for names, words in bullets(docs):
        for n in names:
            for f in resolve(n, full_names):
                if words not in out.setdefault(f, []):
                    out[f].append(words)
    return out, title(docs)
