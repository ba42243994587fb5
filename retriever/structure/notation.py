"""Lean and Mathlib notation the operator-tree parser reads, with precedences.

The table (`notation.tsv`, kept as data) names where each entry came from: Lean 4's
`Init/Notation.lean` and `Init/Core.lean`, Mathlib files, and the `infixl`/`notation`
declarations of the real Mathlib files in `mathlib-src/leandojo-real/source`, which
`declarations` reads. A symbol the table lacks gets a precedence from its first character
(`fallback`): arrows bind like `→`, relations like `=`, anything else like `+`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("notation.tsv")
MAX = 1024  # Lean's `max` precedence: identifiers, parentheses, application's head
ARG = 1023  # Lean's `arg`: application arguments
BINARY = ("infixl", "infixr", "infix")


@dataclass(frozen=True)
class Notation:
    symbol: str
    kind: str  # infixl, infixr, infix, prefix, postfix
    prec: int
    source: str

    @property
    def right_prec(self) -> int:
        """The precedence a binary operator's right operand is parsed at."""
        return self.prec if self.kind == "infixr" else self.prec + 1


@lru_cache(maxsize=1)
def table() -> dict[tuple[str, str], Notation]:
    """(symbol, 'binary' | 'prefix' | 'postfix') -> Notation, from notation.tsv."""
    out: dict[tuple[str, str], Notation] = {}
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#") or line.startswith("symbol\t"):
            continue
        symbol, kind, prec, source = line.split("\t")
        role = "binary" if kind in BINARY else kind
        out[(symbol, role)] = Notation(symbol, kind, int(prec), source)
    return out


@lru_cache(maxsize=1)
def symbols() -> tuple[str, ...]:
    """Every symbol of the table, longest first (the tokenizer's longest match)."""
    return tuple(sorted({s for s, _ in table()}, key=len, reverse=True))


_ARROWS = set("→↪↠≃⟶⇒⥤⟹↦")
_RELATIONS = set("=≠≤≥<>∈∉⊆⊂⊇⊃≡≈≅∼≺≼≻≽⋖⩿∣∥⊥⟂≍")


def fallback(symbol: str) -> Notation:
    """A binary reading of a symbol the table lacks, by its first character."""
    head = symbol[:1]
    if head in _ARROWS:
        return Notation(symbol, "infixr", 25, "fallback: arrow")
    if head in _RELATIONS:
        return Notation(symbol, "infix", 50, "fallback: relation")
    return Notation(symbol, "infixl", 65, "fallback: operator")


_DECL = re.compile(
    r"^\s*(?:@\[[^\]]*\]\s*)?(?:scoped\s+|local\s+)*(infixl|infixr|infix|prefix|postfix)"
    r":(\d+|max|arg)\s+\"\s*([^\"]+?)\s*\"\s*=>", re.M)
_PREC_WORDS = {"max": MAX, "arg": ARG}


def declarations(source: str) -> list[tuple[str, str, int]]:
    """The (symbol, kind, precedence) of every `infixl:65 " + " => ...`-style declaration of a
    Lean file's text (`notation` with several parts is left out: its shape is not an operator)."""
    out = []
    for kind, prec, symbol in _DECL.findall(source):
        out.append((symbol, kind, _PREC_WORDS.get(prec) or int(prec)))
    return out
