"""Identification clouds: which name parts and notation words an English word identifies.

Learned from the corpus' own docstring-declaration pairs: for an English word w of docstrings
and a formal word t of the declarations they document (name parts and statement notation,
`text.declaration_words` without the docstring), the normalised pointwise mutual information
npmi(w, t) = log(p(w,t) / (p(w) p(t))) / -log p(w,t) over the pairs. A word's cloud is its
`size` best formal words with npmi > 0 seen together in at least `min_pairs` pairs. Beside it
sits the curated lexicon (`words.json`): phrases such as "square root" -> sqrt, "at most" -> le.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from retriever.informal.text import query_text, query_word, raw_words, stem, stopwords, tables, words


@dataclass
class Clouds:
    """English stem -> [(formal word, weight)], learned; stemmed phrase -> formal words, curated."""

    learned: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    phrases: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    pairs: int = 0  # docstring-declaration pairs learned from

    @classmethod
    def learn(cls, pairs: Iterable[tuple[list[str], list[str]]], size: int = 5,
              min_pairs: int = 3) -> Clouds:
        """Clouds from (docstring words, formal words) pairs, both stemmed."""
        n = 0
        cw: Counter = Counter()
        ct: Counter = Counter()
        cwt: Counter = Counter()
        for doc, formal in pairs:
            ws, ts = set(doc), set(formal)
            if not ws or not ts:
                continue
            n += 1
            cw.update(ws)
            ct.update(ts)
            cwt.update((w, t) for w in ws for t in ts if w != t)
        by_word: dict[str, list[tuple[str, float]]] = {}
        for (w, t), c in cwt.items():
            if c < min_pairs:
                continue
            p = c / n
            npmi = math.log(p / (cw[w] / n * ct[t] / n)) / -math.log(p) if p < 1 else 1.0
            if npmi > 0:
                by_word.setdefault(w, []).append((t, npmi))
        learned = {w: sorted(ts, key=lambda x: (-x[1], x[0]))[:size] for w, ts in by_word.items()}
        return cls(learned, curated_phrases(), n)

    def expand(self, query: str, cloud_weight: float = 0.5, lexicon_weight: float = 1.0,
               named_weight: float = 1.0, conventions: bool = True) -> dict[str, tuple[float, str]]:
        """The weighted terms of `query`: its own words (weight 1, or `named_weight` for a word
        the lexicon names: "addition" is then mostly `add`, so a docstring that says
        "addition" does not outweigh the name `add_comm`), the formal words its phrases name in
        the lexicon, and each word's learned cloud; each term with the query word or phrase it
        came from (what a hit shows as why it matched). `conventions=False` reads the query
        without written mathematics' conventions (d/dx, primes, e^x, juxtaposed letters,
        hyphenated names): what the audit of issue 62 scored to see how much they add."""
        raw = ([query_word(w) for w in raw_words(query_text(query))] if conventions
               else raw_words(query, hyphen=False))
        stems = [stem(w) for w in raw]
        stop = stopwords()
        terms: dict[str, tuple[float, str]] = {}

        def add(term: str, weight: float, source: str) -> None:
            if weight > terms.get(term, (0.0, ""))[0]:
                terms[term] = (weight, source)

        longest = max((len(p) for p in self.phrases), default=0)
        named = {i + j for i in range(len(stems)) for n in range(1, longest + 1)
                 if tuple(stems[i:i + n]) in self.phrases and (n > 1 or raw[i] not in stop)
                 for j in range(n)} if lexicon_weight else set()
        for i, (w, s) in enumerate(zip(raw, stems)):
            if w not in stop:
                add(s, named_weight if i in named else 1.0, w)
        for i in range(len(stems)):
            for n in range(1, longest + 1):
                phrase = tuple(stems[i:i + n])
                if len(phrase) < n:
                    break
                if n == 1 and raw[i] in stop:
                    continue
                for t in self.phrases.get(phrase, ()):
                    add(t, lexicon_weight, " ".join(raw[i:i + n]))
        for w, s in zip(raw, stems):
            if w in stop:
                continue
            for t, npmi in self.learned.get(s, ()):
                add(t, cloud_weight * npmi, w)
        return terms


def curated_phrases() -> dict[tuple[str, ...], list[str]]:
    """The lexicon inverted: each English phrase (stemmed words) -> the formal words it names."""
    out: dict[tuple[str, ...], list[str]] = {}
    for formal, phrases in tables()["lexicon"].items():
        t = stem(formal)
        for phrase in phrases:
            key = tuple(stem(w) for w in raw_words(phrase))
            if key and t not in out.setdefault(key, []):
                out[key].append(t)
    return out


def formal_words(full_name: str, code: str) -> list[str]:
    """What a docstring is paired with: the declaration's name parts and statement words."""
    return words(full_name) + words(code)
