"""Just enough Lean 4 lexing to tell code from comments and strings.

`mask_non_code` blanks comments, string and char literals to spaces (newlines kept), so
every later regex sees code only and every index still points at the same character of the
original text. Lean block comments nest (`/- /- -/ -/`), which a regex cannot follow.
"""
from __future__ import annotations

import re

# Characters that continue an identifier: `h'`, `foo!`, `bar?`, `x₁`, `Nat.succ`.
_IDENT_EXTRA = "_'!?"

_CHAR_LITERAL = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)|[^\\'\n])'")
_RAW_STRING = re.compile(r'r(#*)"')
_CANDIDATE = re.compile(r"--|/-|\"|r#*\"|'")


def is_ident_char(c: str) -> bool:
    return c.isalnum() or c in _IDENT_EXTRA


def _string_end(text: str, i: int) -> int:
    """Index just past the closing quote of the string whose body starts at `i`."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        i += 1
    return n


def _block_comment_end(text: str, i: int) -> int:
    """Index just past the `-/` closing the comment opened at `i` (nesting counted)."""
    depth, j, n = 0, i, len(text)
    while j < n:
        if text.startswith("/-", j):
            depth += 1
            j += 2
        elif text.startswith("-/", j):
            depth -= 1
            j += 2
            if depth == 0:
                return j
        else:
            j += 1
    return n


def mask_non_code(text: str) -> str:
    """`text` with comments, strings and char literals replaced by spaces, newlines kept."""
    out = list(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] not in "\r\n":
                out[k] = " "

    i, n = 0, len(text)
    while i < n:
        # Jump to the next character that may open a comment, string or char literal.
        m = _CANDIDATE.search(text, i)
        if m is None:
            break
        i = m.start()
        c = text[i]
        after_ident = i > 0 and is_ident_char(text[i - 1])
        if text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/-", i):
            j = _block_comment_end(text, i)
        elif c == '"':
            j = _string_end(text, i + 1)
        elif c == "r" and not after_ident and (m := _RAW_STRING.match(text, i)):
            close = '"' + m.group(1)
            k = text.find(close, m.end())
            j = n if k < 0 else k + len(close)
        elif c == "'" and not after_ident and (m := _CHAR_LITERAL.match(text, i)):
            j = m.end()
        else:
            i += 1
            continue
        blank(i, j)
        i = j
    return "".join(out)
