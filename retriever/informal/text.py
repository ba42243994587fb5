"""One vocabulary for informal queries and declarations: stemmed words.

A declaration's name is split by Mathlib's naming conventions (`Nat.Prime.two_le` -> nat prime
two le, `hasDerivAt` -> has deriv at), its statement's notation is named by the words those
names use (`√2` -> sqrt two, `a ∣ b` -> dvd), and its docstring and a query are read as English
words, with LaTeX commands (`\\sqrt{2}` -> sqrt two) and Lean-like terms (`∀ a b : ℕ, a * b =
b * a`) read by the same rules. All tables are data (`words.json`).
"""
from __future__ import annotations

import functools
import json
import re
import unicodedata
from importlib import resources

_LATEX_CMD = re.compile(r"\\([A-Za-z]+)")
_MATHBB = re.compile(r"\\mathbb\s*\{?\s*([NZQRC])\s*\}?")
_INVERSE = re.compile(r"\^\s*\{\s*-\s*1\s*\}|⁻¹")
_SQUARE = re.compile(r"\^\s*\{?\s*2\s*\}?(?![\d])|²")
_IDENT = re.compile(r"[^\W\d][\w]*(?:\.[^\W\d][\w]*)*")
_NUMBER = re.compile(r"\d+")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^\W\d_A-Za-z]+")
_ATTRIBUTES = re.compile(r"@\[[^\]]*\]")  # `@[to_additive, simp]`: how Lean handles it, not what it says
# A hyphen between two words joins them (Cauchy-Schwarz, fixed-point); `a-b` stays a minus.
_HYPHEN = re.compile(r"(?<=[^\W\d_]{2})-(?=[^\W\d_]{2})")
# Query-side conventions of written mathematics: d/dx and a prime are derivatives, e^x is exp.
_DDX = re.compile(r"\\frac\s*\{\s*d\s*\}\s*\{\s*d[A-Za-z]\s*\}|\bd\s*/\s*d[A-Za-z]\b")
_PRIME = re.compile(r"(?:(?<![\w.'])[A-Za-z]{1,2}|\))'(?![A-Za-z])")
_EXP = re.compile(r"(?<![\w\\])e\s*\^")
_TOKEN = re.compile(r"\\[A-Za-z]+|[^\W\d][\w]*(?:\.[^\W\d][\w]*)*|\d+|[^\w\s\\]+|\\")


@functools.cache
def tables() -> dict:
    """words.json, read once."""
    return json.loads(resources.files("retriever.informal").joinpath("words.json").read_text("utf-8"))


@functools.cache
def _stemmer():
    import snowballstemmer  # here: only the informal retriever needs it
    return snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return _stemmer().stemWord(word)


@functools.cache
def stopwords() -> frozenset[str]:
    return frozenset(tables()["stopwords"])


def _plain(text: str) -> str:
    """Accents dropped (Bézout -> Bezout), so names typed either way meet."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


@functools.lru_cache(maxsize=200_000)
def _parts(name: str) -> tuple[str, ...]:
    if name.startswith("_private."):
        name = re.sub(r"^_private\.[\w.]*?\.0\.", "", name)
    out: list[str] = []
    for piece in re.split(r"[._'!?]+", _plain(name)):
        out += [p.lower() for p in _PARTS.findall(piece)]
    return tuple(out)


def name_parts(name: str) -> list[str]:
    """The words of a Lean name by Mathlib's conventions, lower case:
    `Nat.Prime.two_le` -> [nat, prime, two, le]; `exists_ratio_hasDerivAt_eq_ratio_slope` ->
    [exists, ratio, has, deriv, at, eq, ratio, slope]; private mangling is dropped."""
    return list(_parts(name))


@functools.cache
def _notation() -> tuple[dict[str, list[str]], re.Pattern]:
    table = {k: v.split() for k, v in tables()["notation"].items()}
    # Longest symbol first (`→+*` before `→`); a symbol no convention names gives no word.
    return table, re.compile("|".join(map(re.escape, sorted(table, key=len, reverse=True))))


@functools.lru_cache(maxsize=100_000)
def _symbols(run: str) -> tuple[str, ...]:
    """A run of notation named in words."""
    table, pattern = _notation()
    return tuple(w for m in pattern.findall(run) for w in table[m])


def query_text(query: str) -> str:
    """A query with written mathematics' conventions read as Mathlib names them: `\\frac{d}{dx}`
    and `f'` are deriv, `e^x` is exp (a declaration's code says `deriv`, `Real.exp`)."""
    query = _DDX.sub(" deriv ", query)
    query = _PRIME.sub(lambda m: m.group(0)[:-1] + " deriv ", query)
    return _EXP.sub(" exp ", query)


def query_word(word: str) -> str:
    """A query word as Mathlib would name it: two letters a formula juxtaposes (`ab`, `fg`,
    `ix` in e^{ix}) are a product, `mul`, unless Mathlib's names use them as a word (`le`,
    `pi`, ...: words.json `short_words`)."""
    if len(word) == 2 and word.isascii() and word.isalpha() and word not in _short_words():
        return "mul"
    return word


@functools.cache
def _short_words() -> frozenset[str]:
    return frozenset(tables()["short_words"])


def _prepare(text: str, hyphen: bool = True) -> str:
    text = _HYPHEN.sub(" ", text) if hyphen else text
    text = _MATHBB.sub(lambda m: " " + {"N": "ℕ", "Z": "ℤ", "Q": "ℚ", "R": "ℝ", "C": "ℂ"}[m.group(1)] + " ", text)
    text = text.replace("\\|", " ‖ ").replace("\\{", " ").replace("\\}", " ")
    text = _INVERSE.sub(" inv ", text)
    return _SQUARE.sub(" sq pow two ", text)


@functools.lru_cache(maxsize=500_000)
def _token_words(tok: str) -> tuple[str, ...]:
    """The words of one token: a LaTeX command, a number, an identifier or a run of notation."""
    t = tables()
    if tok.startswith("\\"):
        return tuple(t["latex"].get(tok[1:], tok[1:].lower()).split())
    if tok[0].isdigit():
        return (t["numbers"].get(tok, tok),)
    if _IDENT.fullmatch(tok):
        if tok in t["notation"]:  # ℝ, π, ...: letters Lean reads as notation
            return tuple(t["notation"][tok].split())
        return _parts(tok)
    return _symbols(tok)


@functools.lru_cache(maxsize=500_000)
def _token_stems(tok: str) -> tuple[str, ...]:
    stop = stopwords()
    return tuple(stem(w) for w in _token_words(tok) if w not in stop)


def raw_words(text: str, hyphen: bool = True) -> list[str]:
    """The words of `text` (English, LaTeX, Lean or a mix), lower case, unstemmed, in order
    (`hyphen=False`: a hyphen between two words is read as notation, as before the query
    conventions of f4d072f)."""
    return [w for tok in _TOKEN.findall(_prepare(text, hyphen)) for w in _token_words(tok)]


def words(text: str) -> list[str]:
    """`raw_words`, stemmed, stop words dropped: what is indexed and what a query matches."""
    return [w for tok in _TOKEN.findall(_prepare(text)) for w in _token_stems(tok)]


def declaration_words(full_name: str, code: str, doc: str, name_weight: int = 2,
                      doc_weight: int = 1) -> list[str]:
    """The indexed text of one declaration: its name's parts (`name_weight` times), its
    statement's words and notation, and its docstring's words (`doc_weight` times)."""
    stop = stopwords()
    name = [stem(w) for w in name_parts(full_name) if w not in stop]
    return name * name_weight + words(_ATTRIBUTES.sub(" ", code)) + words(doc) * doc_weight
