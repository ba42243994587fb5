"""Tokenizers for lexical retrieval over Lean text.

`lean_tokens` keeps identifiers whole (`Nat.succ_le_iff`, `h₁`, `inst✝`) and also emits the
components of a dotted name, because a state mentions `a.succ` or `succ_le_iff` where the
premise is `Nat.succ_le_iff`; runs of notation (`≤`, `→`, `⁻¹`, `∘`) stay whole tokens,
since splitting `≤` from `<` would throw away what makes order lemmas findable.
`plain_tokens` is the whitespace-and-brackets baseline the sanity anchor was measured with.
"""
from __future__ import annotations

import re

_BRACKETS = "()[]{}⟨⟩⦃⦄⟦⟧‖"
# An identifier: word characters (Unicode letters, digits, subscripts), primes, `!`, `?`,
# `✝` marks of inaccessible names, joined by dots.
_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_IDENT = rf"[^\W\d][\w'!?✝{_SUPERSCRIPTS}]*(?:\.[^\W\d][\w'!?✝{_SUPERSCRIPTS}]*)*"
_NUMBER = r"\d+(?:\.\d+)?"
_NOTATION = rf"(?:[^\w\s{re.escape(_BRACKETS)},]|[{_SUPERSCRIPTS}])+"
_TOKEN = re.compile(rf"{_IDENT}|{_NUMBER}|{_NOTATION}")
_PLAIN_SPLIT = re.compile(rf"[\s{re.escape(_BRACKETS)},]+")


def lean_tokens(text: str) -> list[str]:
    out: list[str] = []
    for tok in _TOKEN.findall(text):
        out.append(tok)
        if "." in tok and tok[0] not in "0123456789":
            out.extend(p for p in tok.split(".") if p)
    return out


def plain_tokens(text: str) -> list[str]:
    return [t for t in _PLAIN_SPLIT.split(text) if t]


TOKENIZERS = {"lean": lean_tokens, "plain": plain_tokens}
