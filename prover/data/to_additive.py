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

_NAME_DICT = {
    "one": ["zero"], "mul": ["add"], "smul": ["vadd"], "inv": ["neg"], "div": ["sub"],
    "prod": ["sum"], "hmul": ["hadd"], "hsmul": ["hvadd"], "hdiv": ["hsub"], "hpow": ["hsmul"],
    "finprod": ["finsum"], "tprod": ["tsum"], "pow": ["nsmul"], "npow": ["nsmul"],
    "zpow": ["zsmul"], "mabs": ["abs"], "monoid": ["add", "Monoid"],
    "submonoid": ["add", "Submonoid"], "group": ["add", "Group"], "subgroup": ["add", "Subgroup"],
    "semigroup": ["add", "Semigroup"], "magma": ["add", "Magma"], "haar": ["add", "Haar"],
    "prehaar": ["add", "Prehaar"], "unit": ["add", "Unit"], "units": ["add", "Units"],
    "cyclic": ["add", "Cyclic"], "rootable": ["divisible"], "semigrp": ["add", "Semigrp"],
    "grp": ["add", "Grp"], "commute": ["add", "Commute"], "semiconj": ["add", "Semiconj"],
    "zpowers": ["zmultiples"], "powers": ["multiples"], "multipliable": ["summable"],
    "gpfree": ["apfree"], "quantale": ["add", "Quantale"], "square": ["even"], "mconv": ["conv"],
    "irreducible": ["add", "Irreducible"], "mlconvolution": ["lconvolution"],
}
# Words of a namespace guessed without the environment: the algebraic structures only (a
# namespace `Prod` or `Pow` is not translated unless a twin of it is known).
_STRUCTURE_WORDS = frozenset(w for w, t in _NAME_DICT.items() if len(t) == 2) | {"mul", "one", "inv", "div", "smul"}

# fixAbbreviation: (pieces matched, replacement), the longest patterns first.
_ABBREVIATIONS = [(p.split(" "), r) for p, r in (
    ("cancel Add", "addCancel"), ("Cancel Add", "AddCancel"), ("left Cancel Add", "addLeftCancel"),
    ("Left Cancel Add", "AddLeftCancel"), ("right Cancel Add", "addRightCancel"),
    ("Right Cancel Add", "AddRightCancel"), ("cancel Comm Add", "addCancelComm"),
    ("Cancel Comm Add", "AddCancelComm"), ("comm Add", "addComm"), ("Comm Add", "AddComm"),
    ("Zero LE", "Nonneg"), ("zero _ le", "nonneg"), ("zero LE", "nonneg"), ("Zero LT", "Pos"),
    ("zero _ lt", "pos"), ("zero LT", "pos"), ("LE Zero", "Nonpos"), ("le _ zero", "nonpos"),
    ("LT Zero", "Neg"), ("lt _ zero", "neg"), ("Add Single", "Single"), ("add Single", "single"),
    ("add _ single", "single"), ("Add Support", "Support"), ("add Support", "support"),
    ("add _ support", "support"), ("Add TSupport", "TSupport"), ("add TSupport", "tsupport"),
    ("add _ tsupport", "tsupport"), ("Add Indicator", "Indicator"), ("add Indicator", "indicator"),
    ("add _ indicator", "indicator"), ("is Even", "even"), ("Is Even", "Even"),
    ("is Regular", "isAddRegular"), ("Is Regular", "IsAddRegular"),
    ("is Left Regular", "isAddLeftRegular"), ("Is Left Regular", "IsAddLeftRegular"),
    ("is Right Regular", "isAddRightRegular"), ("Is Right Regular", "IsAddRightRegular"),
    ("Has Fundamental Domain", "HasAddFundamentalDomain"),
    ("has Fundamental Domain", "hasAddFundamentalDomain"), ("Quotient Measure", "AddQuotientMeasure"),
    ("quotient Measure", "addQuotientMeasure"), ("HSmul", "HSMul"), ("NSmul", "NSMul"),
    ("Nsmul", "NSMul"), ("ZSmul", "ZSMul"), ("neg Fun", "invFun"), ("Neg Fun", "InvFun"),
    ("unique Prods", "uniqueSums"), ("Unique Prods", "UniqueSums"), ("order Of", "addOrderOf"),
    ("Order Of", "AddOrderOf"), ("is Of Fin Order", "isOfFinAddOrder"),
    ("Is Of Fin Order", "IsOfFinAddOrder"), ("is Central Scalar", "isCentralVAdd"),
    ("Is Central Scalar", "IsCentralVAdd"), ("is Scalar Tower", "vaddAssocClass"),
    ("Is Scalar Tower", "VAddAssocClass"), ("function _ add Semiconj", "function_semiconj"),
    ("function _ add Commute", "function_commute"), ("Zero Le Part", "PosPart"),
    ("Le Zero Part", "NegPart"), ("zero Le Part", "posPart"), ("le Zero Part", "negPart"),
    ("Division Add Monoid", "SubtractionMonoid"), ("division Add Monoid", "subtractionMonoid"),
    ("Sub Neg Zero Add Monoid", "SubNegZeroMonoid"), ("sub Neg Zero Add Monoid", "subNegZeroMonoid"),
    ("modular Character", "addModularCharacter"), ("Modular Character", "AddModularCharacter"),
)]
_ABBREVIATIONS.sort(key=lambda pr: -len(pr[0]))
_END_CAPITALS = ("LE", "LT", "WF")


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
    guessed = ".".join(guess_name(p, _STRUCTURE_WORDS) for p in parts)
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

