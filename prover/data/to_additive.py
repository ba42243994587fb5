"""The names `@[to_additive]` gives the additive twins of Mathlib's multiplicative declarations.

A source-level copy of Mathlib's `ToAdditive.guessName` and `targetName`: the name is split at
case changes and `_`, each piece translated word by word (`mul` → `add`, `one` → `zero`,
`prod` → `sum`, ...), then a few abbreviations fixed (`zero_le` → `nonneg`). The namespace of
the twin is the original's with its longest prefix that has a known translation replaced
(Lean looks it up in the environment; here, in the twins seen so far in import order). Where
the environment's translation is unknown the namespace is guessed with the structure words
only (`Monoid` → `AddMonoid`, never `Prod` → `Sum`), and the caller counts it as guessed.
"""
from __future__ import annotations

import json
from importlib.resources import files

# to_additive's dictionaries are data (`to_additive.json`), each read from Mathlib's source named there.
DICTIONARY = json.loads(files("prover.data").joinpath("to_additive.json").read_text(encoding="utf-8"))
_NAME_DICT: dict[str, list[str]] = DICTIONARY["name_dict"]
# Words of a namespace guessed without the environment: the algebraic structures only (a
# namespace `Prod` or `Pow` is not translated unless a twin of it is known).
STRUCTURE_WORDS = frozenset(w for w, t in _NAME_DICT.items() if len(t) == 2) | {"mul", "one", "inv", "div", "smul"}

# fixAbbreviation: (pieces matched, replacement), the longest patterns first.
_ABBREVIATIONS = sorted(((p.split(" "), r) for p, r in DICTIONARY["abbreviations"]), key=lambda pr: -len(pr[0]))
_END_CAPITALS = tuple(DICTIONARY["end_capitals"])


def split_case(s: str) -> list[str]:
    """Lean's `String.splitCase`: pieces at `_` (kept as pieces) and before an upper-case letter
    that follows a lower-case one (`HMul` stays whole, `ZeroLE` is `Zero`, `LE`)."""
    out: list[str] = []
    cur = ""
    for i, c in enumerate(s):
        if c == "_" or (cur and cur[-1] == "_"):
            if cur:
                out.append(cur)
            cur = c
            continue
        if cur and c.isupper() and (not cur[-1].isupper() or cur in _END_CAPITALS):
            out.append(cur)
            cur = c
            continue
        cur += c
    if cur:
        out.append(cur)
    return out


def _capitalize_like(model: str, word: str) -> str:
    chars = list(word)
    for i, c in enumerate(model[:len(chars)]):
        if c.islower():
            chars[i] = chars[i].lower()
        elif c.isupper():
            chars[i] = chars[i].upper()
    return "".join(chars)


def _fix_abbreviations(pieces: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(pieces):
        for pattern, repl in _ABBREVIATIONS:
            if pieces[i:i + len(pattern)] == pattern:
                out.append(repl)
                i += len(pattern)
                break
        else:
            out.append(pieces[i])
            i += 1
    return out


def guess_name(s: str, words: dict[str, list[str]] | frozenset | None = None) -> str:
    """Mathlib's `guessName` of one name component (`mul_one` → `add_zero`). `words`: only
    translate these dictionary words (namespace guessing)."""
    def one(token: str) -> str:
        pieces = []
        for piece in split_case(token):
            low = piece.lower()
            repl = _NAME_DICT.get(low) if words is None or low in words else None
            if repl is None:
                pieces.append(piece)
            else:
                pieces += [_capitalize_like(piece, repl[0]), *repl[1:]]
        return "".join(_fix_abbreviations(pieces))
    return "'".join(one(t) for t in s.split("'"))


def translate_prefix(prefix: str, known: dict[str, str]) -> tuple[str, bool]:
    """The twin's namespace: the longest prefix of `prefix` with a known translation replaced
    (`Name.mapPrefix findTranslation?`); else the structure words guessed. Also whether that
    was a guess (no known translation, and the guess changed something)."""
    if not prefix:
        return prefix, False
    parts = prefix.split(".")
    for k in range(len(parts), 0, -1):
        head = ".".join(parts[:k])
        if head in known:
            return ".".join([known[head], *parts[k:]]), False
    guessed = ".".join(guess_name(p, STRUCTURE_WORDS) for p in parts)
    return guessed, guessed != prefix


def twin_name(src: str, explicit: str | None, known: dict[str, str]) -> tuple[str, bool]:
    """Mathlib's `targetName` for the declaration `src`, with the attribute's explicit name (or
    None): (the additive name, whether its namespace was guessed)."""
    prefix, _, last = src.rpartition(".")
    pre, guessed = translate_prefix(prefix, known)
    if explicit is None:
        return (f"{pre}.{guess_name(last)}" if pre else guess_name(last)), guessed
    depth = explicit.count(".") + 1
    pre_parts = pre.split(".") if pre else []
    keep = pre_parts[:max(0, len(pre_parts) - (depth - 1))]
    return ".".join([*keep, explicit]), guessed and bool(keep)

