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
_TOKEN = re.compile(r"\\[A-Za-z]+|[^\W\d][\w]*(?:\.[^\W\d][\w]*)*|\d+|\S")


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
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def name_parts(name: str) -> list[str]:
    """The words of a Lean name by Mathlib's conventions, lower case:
    `Nat.Prime.two_le` -> [nat, prime, two, le]; `exists_ratio_hasDerivAt_eq_ratio_slope` ->
    [exists, ratio, has, deriv, at, eq, ratio, slope]; private mangling is dropped."""
    if name.startswith("_private."):
        name = re.sub(r"^_private\.[\w.]*?\.0\.", "", name)
    out = []
    for piece in re.split(r"[._'!?]+", _plain(name)):
        out += [p.lower() for p in _PARTS.findall(piece)]
    return out


@functools.cache
def _notation() -> tuple[dict[str, str], int]:
    table = tables()["notation"]
    return table, max(map(len, table))


def _symbols(run: str) -> list[str]:
    """A run of notation named in words, longest symbol first (`→+*` before `→`)."""
    table, longest = _notation()
    out, i = [], 0
    while i < len(run):
        for n in range(min(longest, len(run) - i), 0, -1):
            if run[i:i + n] in table:
                out += table[run[i:i + n]].split()
                i += n
                break
        else:
            i += 1  # a symbol no convention names: no word
    return out


def raw_words(text: str) -> list[str]:
    """The words of `text` (English, LaTeX, Lean or a mix), lower case, unstemmed, in order."""
    t = tables()
    text = _MATHBB.sub(lambda m: " " + {"N": "ℕ", "Z": "ℤ", "Q": "ℚ", "R": "ℝ", "C": "ℂ"}[m.group(1)] + " ", text)
    text = text.replace("\\|", " ‖ ").replace("\\{", " ").replace("\\}", " ")
    text = _INVERSE.sub(" inv ", text)
    text = _SQUARE.sub(" sq pow two ", text)
    out: list[str] = []
    for tok in _TOKEN.findall(text):
        if tok.startswith("\\"):
            out += t["latex"].get(tok[1:], tok[1:].lower()).split()
        elif tok[0].isdigit():
            out.append(t["numbers"].get(tok, tok))
        elif _IDENT.fullmatch(tok):
            if tok in t["notation"]:  # ℝ, π, ...: letters Lean reads as notation
                out += t["notation"][tok].split()
            else:
                out += name_parts(tok)
        else:
            out += _symbols(tok)
    return out


def words(text: str) -> list[str]:
    """`raw_words`, stemmed, stop words dropped: what is indexed and what a query matches."""
    stop = stopwords()
    return [stem(w) for w in raw_words(text) if w not in stop]


def declaration_words(full_name: str, code: str, doc: str, name_weight: int = 2,
                      doc_weight: int = 1) -> list[str]:
    """The indexed text of one declaration: its name's parts (`name_weight` times), its
    statement's words and notation, and its docstring's words (`doc_weight` times)."""
    stop = stopwords()
    name = [stem(w) for w in name_parts(full_name) if w not in stop]
    return name * name_weight + words(code) + words(doc) * doc_weight
