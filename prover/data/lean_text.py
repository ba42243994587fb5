"""Lean 4 lexing: code told from comments and strings, and code cut into tokens as Lean cuts it.

`mask_non_code` blanks comments, string and char literals to spaces (newlines kept), so
every later regex sees code only and every index still points at the same character of the
original text. Lean block comments nest (`/- /- -/ -/`), which a regex cannot follow, and an
escaped identifier (`«/-»`, `«--»`, `«"»`) is code, never the start of a comment or string.

`code_tokens` cuts masked code into Lean's tokens by Lean's own character classes
(`isIdFirst`, `isIdRest`, `isLetterLike`, `isSubScriptAlnum` of `Init/Meta`): a number ends
where its digits end, so `2axiom` is `2` then `axiom`; `h.1theorem` is `h`, `.1`, `theorem`;
`a⁻¹theorem` is `a`, `⁻¹`, `theorem`. An identifier is a keyword only when the whole token
is (`theorem'` and `Foo.theorem` are names), as Lean's `identFn` decides.
"""
from __future__ import annotations

import re

# Characters that continue an identifier: `h'`, `foo!`, `bar?`, `x₁`, `Nat.succ`.
_IDENT_EXTRA = "_'!?"

_CHAR_LITERAL = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)|[^\\'\n])'")
_RAW_STRING = re.compile(r'r(#*)"')


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


_COMMENT_MARK = re.compile(r"/-|-/")
# Where something to blank (or to step over) may start: a comment, a string, a raw string, a
# char literal, or an escaped identifier, whose `/-`, `--` or `"` is part of a name.
_CANDIDATE = re.compile(r"--|/-|\"|r#*\"|'|«")
_NEWLINES = re.compile(r"[^\r\n]")


def _block_comment_end(text: str, i: int) -> int:
    """Index just past the `-/` closing the comment opened at `i` (nesting counted)."""
    depth, n = 0, len(text)
    for m in _COMMENT_MARK.finditer(text, i):
        if m.start() < i:
            continue
        if m.group() == "/-":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.end()
    return n


def mask_non_code(text: str) -> str:
    """`text` with comments, strings and char literals replaced by spaces, newlines kept."""
    out: list[str] = []
    i = done = 0
    n = len(text)
    while i < n:
        m = _CANDIDATE.search(text, i)  # jump to the next place a literal or comment may start
        if m is None:
            break
        i = m.start()
        c = text[i]
        after_ident = i > 0 and is_ident_char(text[i - 1])
        if c == "«":  # an escaped identifier is code: step over it, blanking nothing
            k = text.find("»", i + 1)
            i = n if k < 0 else k + 1
            continue
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
        out.append(text[done:i])
        out.append(_NEWLINES.sub(" ", text[i:j]))
        done = i = j
    out.append(text[done:])
    return "".join(out)


# Lean's identifier characters (Init/Meta: isLetterLike, isSubScriptAlnum; the Latin-1 and
# Latin Extended-A ranges are letter-like in later toolchains: the union of both is read here).
_LETTER_LIKE = ("\u03b1-\u03ba\u03bc-\u03c9\u0391-\u039f\u03a1\u03a2\u03a4-\u03a9\u03ca-\u03fb"
                "\u1f00-\u1ffe\u2100-\u214f\U0001d49c-\U0001d59f"
                "\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff\u0100-\u017f")
_SUBSCRIPT = "\u2080-\u2089\u2090-\u209c\u1d62-\u1d6a\u2c7c"
_ID_FIRST = f"A-Za-z_{_LETTER_LIKE}"
_ID_REST = f"A-Za-z0-9_'!?{_LETTER_LIKE}{_SUBSCRIPT}"
_PART = f"(?:«[^»]*»|[{_ID_FIRST}][{_ID_REST}]*)"
_TOKEN = re.compile(
    rf"(?P<ident>{_PART}(?:\.{_PART})*)"
    r"|(?P<number>0[xX][0-9a-fA-F_]*|0[bB][01_]*|0[oO][0-7_]*|[0-9][0-9_]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    rf"|(?P<hash>#[{_ID_FIRST}][{_ID_REST}]*)"
    r"|(?P<field>\.[0-9]+)"
    r"|(?P<attribute>@\[)"
    r"|(?P<symbol>\S)")
_SPACE = re.compile(r"\s+")


def code_tokens(code: str) -> list[tuple[str, str, int]]:
    """The tokens of masked code (`mask_non_code`), each (kind, text, start): kind is ident,
    number, hash (`#eval`, `#s`), field (`.1`), attribute (`@[`) or symbol (one character)."""
    out: list[tuple[str, str, int]] = []
    i, n = 0, len(code)
    while i < n:
        s = _SPACE.match(code, i)
        if s is not None:
            i = s.end()
            continue
        m = _TOKEN.match(code, i)
        if m is None:  # an unclosed `«`: the rest is one unfinished identifier
            out.append(("ident", code[i:], i))
            break
        out.append((m.lastgroup or "symbol", m.group(), i))
        i = m.end()
    return out
