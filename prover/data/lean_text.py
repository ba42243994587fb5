"""Lean 4 lexing: code told from comments and strings, and code cut into tokens as Lean cuts it.

`mask_non_code` blanks comments, string and char literals to spaces (newlines kept), so
every later regex sees code only and every index still points at the same character of the
original text. Lean block comments nest (`/- /- -/ -/`), which a regex cannot follow, and an
escaped identifier (`«/-»`, `«--»`, `«"»`) is code, never the start of a comment or string.

`code_tokens` cuts masked code into Lean's tokens by Lean's own character classes
(`isIdFirst`, `isIdRest`, `isLetterLike`, `isSubScriptAlnum` of `Init/Meta`): a number ends
where its digits end, so `2axiom` is `2` then `axiom`; `h.1theorem` is `h`, `.1`, `theorem`;
`a⁻¹theorem` is `a`, `⁻¹`, `theorem`. An identifier is a keyword only when the whole token
is (`theorem'` and `Foo.theorem` are names), as Lean's `identFn` decides; a token holding
characters no identifier has (`gen_injective_theorems%`) is read whole where it starts.

After a number, Lean starts a new token: `1'"'` is `1` then the char literal `'"'`, `1r"\"`
is `1` then the raw string `r"\"` (no escapes in a raw string). A string after `s!` (and the
other tokens of INTERPOLATING) is interpolated: `s!"{"\""}"` holds the term `"\""`, a string
of its own. Each rule was read in Lean's tokenizer (src/Lean/Parser/Basic.lean at 00c1b827:
`tokenFnAux`, `numberFnAux`, `rawStrLitFnAux`, `identFnAux`, `mkIdResult`).
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


# Tokens after which Lean reads a string as an interpolated one (`interpolatedStr(term)`: a `{`
# opens a term, which may hold strings of its own, up to its `}`): Lean's own `s!`, `m!`, `f!`
# (Init/Data/ToString/Macro.lean, Lean/Message.lean, Init/Data/Format/Macro.lean), and the core
# parsers that take `(interpolatedStr(term) <|> term)`: `throwError`, `throwErrorAt`'s message
# after its term is not covered (it follows a term), `trace[...]`, `println!`, `dbg_trace`,
# `logInfo`-style macros are functions. Any library may add its own, so the text check also
# reads every string holding a `{` both ways (`interpolate_all`).
INTERPOLATING = ("s!", "m!", "f!", "println!", "throwError", "dbg_trace", "throwErrorAt")
_BEFORE_STRING = re.compile(r"(?:(" + "|".join(re.escape(t) for t in INTERPOLATING)
                            + r")|(trace\[[^\]\n]*\]))\s*$")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F_]*|0[bB][01_]*|0[oO][0-7_]*"
                     r"|[0-9][0-9_]*(?:\.(?:[0-9][0-9_]*)?)?(?:[eE][+-]?[0-9][0-9_]*)?")


def _at_token_start(text: str, i: int, lo: int = 0) -> bool:
    """Whether Lean's tokenizer reaches position `i` as the start of a token (rather than in
    the middle of an identifier): `x'` continues `x`, but in `1'a'` the number `1` ends at
    its digits and `'a'` is a char literal, in `1r"x"` `r"x"` a raw string (Lean's `tokenFnAux`
    and `numberFnAux`, src/Lean/Parser/Basic.lean). The run of identifier characters, dots and
    quotes before `i` is cut into tokens the way Lean cuts it, from a place known to start one
    (`lo`, the end of the last literal; a space; ASCII punctuation). After any other symbol (a
    notation such as `⁻¹'` may end in a quote) the old rule stands: a quote after an
    identifier character continues it."""
    j = i
    while j > lo and (_LETTERISH.match(text[j - 1]) or text[j - 1] == "."):
        j -= 1
    if j > lo and not (text[j - 1].isspace() or text[j - 1] == "»" or (text[j - 1].isascii() and not text[j - 1].isalnum())):
        return i == 0 or not is_ident_char(text[i - 1])
    k = j
    while k < i:
        c = text[k]
        if c in "0123456789":
            k = _NUMBER.match(text, k).end()
        elif c == "'" and not text.startswith("''", k) and (m := _CHAR_LITERAL.match(text, k)):
            k = m.end()
        elif _ID_FIRST_RE.match(c):
            k = _IDENT_RE.match(text, k).end()
        else:
            k += 1
    return k == i


def _interpolated_before(text: str, i: int) -> bool:
    """Whether the string opening at `i` follows one of INTERPOLATING as a token of its own
    (`xs! "a"` is the identifier `xs!`, then a plain string; `1s!"a"` is `1`, `s!`, ...)."""
    base = max(0, i - 200)
    m = _BEFORE_STRING.search(text, base, i)
    if m is None:
        return False
    start = m.start()
    end = start + len(m.group(1) or m.group(2))
    return _at_token_start(text, start, base) and not (end < len(text) and is_ident_char(text[end]) and end < i
                                                 and not text[end].isspace())


def mask_non_code(text: str, interpolate_all: bool = False) -> str:
    """`text` with comments, strings and char literals replaced by spaces, newlines kept. An
    interpolated string's `{term}` parts are code (a term may hold `sorry`, or strings of its
    own): strings after `s!`, `m!`, `f!` and the other tokens of INTERPOLATING are read so,
    and with `interpolate_all` every string is (the reading a library's own interpolating
    syntax would give)."""
    out: list[str] = []
    _mask(text, 0, out, False, interpolate_all)
    return "".join(out)


_CANDIDATE_IN_TERM = re.compile(r"--|/-|\"|r#*\"|'|«|[{}]")


def _mask(text: str, i: int, out: list[str], in_term: bool, interpolate_all: bool) -> int:
    """Append `text[i:]`, masked, to `out`, up to the end or (in an interpolated string's term)
    up to the `}` closing it; returns where it stopped."""
    n, done, depth = len(text), i, 0
    pattern = _CANDIDATE_IN_TERM if in_term else _CANDIDATE
    while i < n:
        m = pattern.search(text, i)  # jump to the next place a literal or comment may start
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c == "{":
            depth += 1
            i += 1
            continue
        if c == "}":
            if depth == 0:
                out.append(text[done:i])
                return i
            depth -= 1
            i += 1
            continue
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
            out.append(text[done:i])
            if interpolate_all or _interpolated_before(text, i):
                done = i = _mask_interpolated(text, i, out, interpolate_all)
            else:
                j = _string_end(text, i + 1)
                out.append(_NEWLINES.sub(" ", text[i:j]))
                done = i = j
            continue
        elif c == "r" and _at_token_start(text, i, done) and (m := _RAW_STRING.match(text, i)):
            close = '"' + m.group(1)
            k = text.find(close, m.end())
            j = n if k < 0 else k + len(close)
        elif c == "'" and _at_token_start(text, i, done) and not text.startswith("''", i) \
                and (m := _CHAR_LITERAL.match(text, i)):
            j = m.end()
        else:
            i += 1
            continue
        out.append(text[done:i])
        out.append(_NEWLINES.sub(" ", text[i:j]))
        done = i = j
    out.append(text[done:])
    return n


def _mask_interpolated(text: str, i: int, out: list[str], interpolate_all: bool) -> int:
    """Mask the interpolated string opening at `i` (Lean's `interpolatedStrFn`): its characters
    blanked, each `{...}` term kept as code (masked as code is); returns the index past it."""
    n = len(text)
    out.append(" ")  # the opening quote
    i += 1
    start = i
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            out.append(_NEWLINES.sub(" ", text[start:i + 1]))
            return i + 1
        if c == "{":
            out.append(_NEWLINES.sub(" ", text[start:i + 1]))
            i = _mask(text, i + 1, out, True, interpolate_all)
            if i < n:  # the `}` closing the term
                out.append(" ")
                i += 1
            start = i
            continue
        i += 1
    out.append(_NEWLINES.sub(" ", text[start:n]))
    return n


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
    r"|(?P<number>0[xX][0-9a-fA-F_]*|0[bB][01_]*|0[oO][0-7_]*|[0-9][0-9_]*(?:\.[0-9][0-9_]*)?(?:[eE][+-]?[0-9][0-9_]*)?)"
    rf"|(?P<hash>#[{_ID_FIRST}][{_ID_REST}]*)"
    r"|(?P<field>\.[0-9]+)"
    r"|(?P<attribute>@\[)"
    r"|(?P<symbol>\S)")
_SPACE = re.compile(r"\s+")
_ID_FIRST_RE = re.compile(f"[{_ID_FIRST}]")
_LETTERISH = re.compile(f"[{_ID_REST}]")
_IDENT_RE = re.compile(rf"{_PART}(?:\.{_PART})*")


def code_tokens(code: str, tokens: frozenset[str] | set[str] = frozenset()) -> list[tuple[str, str, int]]:
    """The tokens of masked code (`mask_non_code`), each (kind, text, start): kind is ident,
    number, hash (`#eval`, `#s`), field (`.1`), attribute (`@[`) or symbol (one character).
    `tokens`: Lean tokens holding characters an identifier cannot (`gen_injective_theorems%`);
    where one starts, the longest wins over an identifier no longer than it, as Lean's
    `mkIdResult`/`isToken` decide (`tk.endPos ≥ idStopPos - idStartPos`), and is given as an
    ident (so a keyword test sees it whole). Given `tokens`, a `#word` that is not one of them
    is `#` then `word`, as Lean's token table reads it."""
    out: list[tuple[str, str, int]] = []
    i, n = 0, len(code)
    firsts = {t[0] for t in tokens}
    while i < n:
        s = _SPACE.match(code, i)
        if s is not None:
            i = s.end()
            continue
        m = _TOKEN.match(code, i)
        if code[i] in firsts:
            best = max((t for t in tokens if code.startswith(t, i)), key=len, default=None)
            if best is not None and (m is None or m.lastgroup != "ident" or len(best) >= len(m.group())):
                out.append(("hash" if best.startswith("#") else "ident", best, i))
                i += len(best)
                continue
        if tokens and m is not None and m.lastgroup == "hash":  # `#foo`, no token: `#`, then `foo`
            out.append(("symbol", "#", i))
            i += 1
            continue
        if m is None:  # an unclosed `«`: the rest is one unfinished identifier
            out.append(("ident", code[i:], i))
            break
        out.append((m.lastgroup or "symbol", m.group(), i))
        i = m.end()
    return out
