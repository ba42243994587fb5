"""A premise's text is its own statement: `@[to_additive]` twins rendered additively.

A corpus that reads a declaration's text from the source at its position gives an additive twin
its multiplicative source's text: `add_comm`'s code and goal read `∀ a b : G, a * b = b * a`.
Lean's `to_additive` builds the twin's statement by translating the source's expression; this
renders the text the same way, without Lean, through to_additive's own dictionaries
(`to_additive.json`):

- names: the corpus's own twins are the translation map (`derived_from` → name, or the name the
  code declares → the twin's name), so `mul_comm` reads `add_comm`; a name no twin covers gets
  Mathlib's `guessName` (`Monoid` → `AddMonoid`, `Monoid.npow` → `AddMonoid.nsmul`), kept only
  when the guessed name is one the corpus declares;
- notation: `*` → `+`, `/` → `-`, `•` → `+ᵥ`, `x ^ n` → `n • x`, `x⁻¹` → `-x`, `1` → `0`,
  `∏` → `∑`, `Mˣ` → `AddUnits M`, `ᵐᵒᵖ` → `ᵃᵒᵖ`; an exponent, and a `1` beside `+`/`-` (an
  index's arithmetic, on a fixed type that to_additive leaves alone), are kept.

Attributes (`@[to_additive "doc"]`), comments and strings are copied as they are. A twin is a
premise of kind `to_additive` (our corpora), or one whose code carries a `to_additive` attribute
and declares another name than the premise's (LeanDojo's corpora, which only carry `code`).
`Dataset.corpus()` applies it, behind `data.render_to_additive`.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from prover.data.lean_text import code_tokens, mask_non_code
from prover.data.premise import Premise
from prover.data.to_additive import DICTIONARY, STRUCTURE_WORDS, guess_name

_SYMBOLS = {n["symbol"]: n["additive"] for n in DICTIONARY["notation"] if n["kind"] in ("infix", "binder")}
_ATTRIBUTE = re.compile(r"@\[[^\]]*\bto_additive\b")
_DECLARED = re.compile(r"(?:theorem|lemma|def|abbrev|instance|structure|class|irreducible_def)\s+([^\s:({\[⦃]+)")
_OPEN, _CLOSE = "([{⟨⦃", ")]}⟩⦄"
_KEYWORDS = {"fun", "λ", "by", "then", "else", "if", "at", "with", "from", "have", "show", "let", "in", "do"}


def is_twin(p: Premise) -> bool:
    if p.kind == "to_additive":
        return True
    if not _ATTRIBUTE.search(p.code):
        return False
    m = _DECLARED.search(p.code)
    return bool(m) and m.group(1).removeprefix("_root_.") not in (p.full_name, p.full_name.rsplit(".", 1)[-1])


def _declared(p: Premise) -> str:
    m = _DECLARED.search(p.code)
    return m.group(1).removeprefix("_root_.") if m else ""


def _source_named(p: Premise) -> str:
    """The multiplicative name a twin's code declares, when it is this twin's source: the twin's
    name is its guessName or the attribute's explicit name (a structure's fields and
    constructors repeat the structure's code, whose name is not their source)."""
    src = _declared(p)
    last = p.full_name.rsplit(".", 1)[-1]
    if src and (guess_name(src.rsplit(".", 1)[-1]) == last
                or re.search(rf"to_additive\s+(?:\([^)]*\)\s*)*{re.escape(last)}\b", p.code)):
        return src
    return ""


class Translations:
    """Multiplicative name → additive name, from the corpus's twins, with guessName for the rest."""

    def __init__(self, premises: Iterable[Premise]) -> None:
        premises = list(premises)
        self.names = {p.full_name for p in premises}
        self.parts = {part for n in self.names for part in n.split(".")}
        self.full: dict[str, str] = {}
        suffix: dict[str, set[str]] = {}
        for p in premises:
            if not is_twin(p):
                continue
            src = p.derived_from or _source_named(p)
            if not src or src == p.full_name:
                continue
            if "." not in src and "." in p.full_name:  # the code's short name, in the twin's namespace
                src = f"{p.full_name.rsplit('.', 1)[0]}.{src}"
            self.full[src] = p.full_name
            a, b = src.split("."), p.full_name.split(".")
            for k in range(1, min(len(a), len(b)) + 1):
                suffix.setdefault(".".join(a[-k:]), set()).add(".".join(b[-k:]))
        # A suffix two twins translate differently is ambiguous: left to the guess.
        self.suffix = {s: next(iter(t)) for s, t in suffix.items() if len(t) == 1}

    def name(self, token: str) -> str:
        at = "@" if token.startswith("@") else ""
        t = token.removeprefix("@")
        if t in self.full:
            return at + self.full[t]
        if t in self.suffix:
            return at + self.suffix[t]
        ns, _, last = t.rpartition(".")
        if ns:
            ns2 = ".".join(guess_name(part, STRUCTURE_WORDS) for part in ns.split("."))
            if ns2 == ns:
                return token
            for cand in (f"{ns2}.{self.suffix.get(last, guess_name(last))}", f"{ns2}.{last}"):
                if cand in self.names:
                    return at + cand
            return token
        guess = guess_name(t, STRUCTURE_WORDS)
        return at + guess if guess != t and guess in self.parts else token


def _operand_start(out: list[str]) -> int:
    """Index in `out` where the last operand starts: a bracket group or one atom."""
    i = len(out) - 1
    if i >= 0 and out[i] and out[i][-1] in _CLOSE:
        depth = 0
        for j in range(i, -1, -1):
            depth += sum(c in _CLOSE for c in out[j]) - sum(c in _OPEN for c in out[j])
            if depth <= 0:
                return j
    return i


def _application_start(out: list[str]) -> int:
    """Index in `out` where the application ending `out` starts (`f i` in `f i ^ n`: application
    binds tighter than any infix)."""
    j = _operand_start(out)
    while j > 0:
        before = out[j - 1].strip()
        if not before or before in _KEYWORDS or not (before[-1].isalnum() or before[-1] in _CLOSE + "_'!?"):
            break
        j = _operand_start(out[:j])
    return j


def render(text: str, names: Translations) -> str:
    """The additive rendering of a twin's text (code, a binder or a goal)."""
    if not text:
        return text
    masked = mask_non_code(text)
    toks = code_tokens(masked)
    # Tokens of an exponent (the operand after `^`) keep their `*`, `1`, ...: a fixed type.
    fixed: set[int] = set()
    for k, (_, s, _) in enumerate(toks):
        if s == "^" and k + 1 < len(toks) and toks[k + 1][1] != "[":
            j, depth = k + 1, 0
            while j < len(toks):
                c = toks[j][1]
                depth += (c in _OPEN) - (c in _CLOSE)
                fixed.add(j)
                if depth <= 0:
                    break
                j += 1
    out: list[str] = []  # one entry per token, the space before it included
    pending_pow: list[tuple[int, int]] = []  # (index in out of `^`, depth) awaiting the exponent
    skip_attr, depth, pos = 0, 0, 0
    k = 0
    while k < len(toks):
        kind, s, at = toks[k]
        space = text[pos:at]
        pos = at + len(s)
        nxt = toks[k + 1][1] if k + 1 < len(toks) else ""
        prev = toks[k - 1][1] if k else ""
        if skip_attr or kind == "attribute":  # `@[...]` copied as it is
            skip_attr += (kind == "attribute") + (s == "[") - (s == "]")
            out.append(space + text[at:pos])
            k += 1
            continue
        if s == "⁻" and nxt == "¹" and (k + 2 >= len(toks) or toks[k + 2][1] != "'"):
            pos = toks[k + 1][2] + 1
            j = _operand_start(out)
            operand = "".join(out[j:])
            lead = len(operand) - len(operand.lstrip())
            before = "".join(out[:j]).rstrip()
            wrap = bool(before) and (before[-1].isalnum() or before[-1] in _CLOSE + "_'↑")  # `↑u⁻¹` is `↑(-u)`
            body = f"-{operand[lead:]}"
            out[j:] = [operand[:lead] + (f"({body})" if wrap else body)]
            k += 2
            continue
        if s == "ˣ" and out:
            j = _operand_start(out)
            operand = "".join(out[j:])
            lead = len(operand) - len(operand.lstrip())
            out[j:] = [f"{operand[:lead]}(AddUnits {operand[lead:]})"]
            k += 1
            continue
        if s == "ᵐ" and nxt == "ᵒ":
            out.append(space + "ᵃ")
        elif kind == "ident":
            out.append(space + names.name(s))
        elif kind == "number" and s == "1" and k not in fixed and prev not in ("+", "-") and nxt not in ("+", "-"):
            out.append(space + "0")
        elif s == "^" and nxt != "[" and k not in fixed:
            out.append(space + "•")  # the operands are swapped once the exponent is read
        elif k in fixed or s not in _SYMBOLS:
            out.append(space + s)
        else:
            out.append(space + _SYMBOLS[s])
        if s in _OPEN:
            depth += 1
        elif s in _CLOSE:
            depth -= 1
        if s == "^" and nxt != "[" and k not in fixed:
            pending_pow.append((len(out) - 1, depth))
        elif pending_pow and pending_pow[-1][1] == depth and pending_pow[-1][0] < len(out) - 1 and (
                k + 1 >= len(toks) or toks[k + 1][1] not in ("⁻", "ˣ")):
            # The exponent is complete: `x ^ n` becomes `n • x` (the reorder of HPow.hPow).
            p, _ = pending_pow.pop()
            left = _application_start(out[:p])
            base = "".join(out[left:p])
            expo = "".join(out[p + 1:])
            lead = len(base) - len(base.lstrip())
            out[left:] = [f"{base[:lead]}{expo.strip()} • {base.strip()}"]
        k += 1
    return "".join(out) + text[pos:]


def render_twins(premises: list[Premise]) -> tuple[list[Premise], int]:
    """The premises with every twin's code, binders and goal rendered additively, and how many
    twins there were."""
    names = Translations(premises)
    out, n = [], 0
    for p in premises:
        if is_twin(p):
            n += 1
            p = replace(p, code=render(p.code, names), args=tuple(render(a, names) for a in p.args),
                        goal=render(p.goal, names))
        out.append(p)
    return out, n
