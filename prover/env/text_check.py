"""The text check: proof text that Lean must never see, refused before it is sent.

A found tactic is placed in a `by` block. Where the tactic parser stops, the block ends and Lean
reads what follows as a new command (`exact h axiom cheat : False`, on one line or the next),
so tactic text holding a token that starts a command could declare an axiom, change how later
answers read, or end the proof early. Such text is refused, as is text that names a `sorry`
(`sorry`, `admit`, `sorryAx`) or an option that weakens what Lean checks (`set_option
debug.skipKernelTC true in decide +kernel` leaves an auxiliary lemma the kernel never saw).

The text is cut into tokens as Lean cuts it (`prover.data.lean_text`: nested comments, string
and char literals, `«»` identifiers, a keyword only as a whole token, `2axiom` as `2` then
`axiom`). Which tokens start a command, and which options weaken checking, are data read from
Lean's own source at the pinned toolchains (`command_keywords.json` beside this file, with the
file each entry comes from; `tools/lean_command_keywords.py` regenerates it from a toolchain's
source), not a list typed here.

What this check is not: meta-code in a tactic (`run_tac`) can still touch the environment. The
kernel replay (`prover.env.verify`) is what stops an environment that was tampered with.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from prover.data.lean_text import code_tokens, mask_non_code

DATA = Path(__file__).with_name("command_keywords.json")
SORRY_WORDS = frozenset(("sorry", "admit", "sorryAx"))


@lru_cache(maxsize=1)
def _data() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(words that start a command, `#` commands, options that weaken checking). Tokens that
    are also tactic or term syntax (`open ... in`, `set_option ... in`, Mathlib's `#check`
    tactic, `open scoped X in`) are left out: a modifier (`scoped`, `@[`, `unsafe`) starts a
    command only before a declaration keyword, which is refused itself."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    also = {entry["token"] for entry in data.get("also_tactic_or_term", [])}
    words = (set(data["keywords"]) | set(data.get("modifiers", {}))) - also
    hashes = ({w for w in words if w.startswith("#")} | set(data.get("hash_commands", {}))) - also
    words = {w for w in words if not w.startswith("#")}
    return frozenset(words), frozenset(hashes), frozenset(data.get("weakening_options", {}))


def command_words() -> frozenset[str]:
    """The words that start a Lean command (declaration modifiers included), from the data."""
    return _data()[0]


def plain_name(token: str) -> str:
    """An identifier as Lean reads it: `«debug».skipKernelTC` is `debug.skipKernelTC`, and
    `_root_.sorryAx` is `sorryAx`."""
    name = token.replace("«", "").replace("»", "")
    return name[len("_root_."):] if name.startswith("_root_.") else name


@lru_cache(maxsize=1)
def _tokens() -> frozenset[str]:
    """The command tokens holding characters no identifier has (`gen_injective_theorems%`, the
    `#` commands): the lexer reads them whole, as Lean's token table does."""
    words, hashes, _ = _data()
    return frozenset(w for w in words if not all(c.isalnum() or c in "_'!?." for c in w)) | hashes


def _problem(text: str) -> str | None:
    # Read as Lean reads it, and, where a string holds a `{`, also as an interpolated string
    # (a library's own syntax may make it one): a problem in either reading refuses the text.
    readings = [mask_non_code(text)]
    if "{" in text and '"' in text:
        readings.append(mask_non_code(text, interpolate_all=True))
    for code in readings:
        problem = _problem_in(text, code)
        if problem is not None:
            return problem
    return None


def _problem_in(text: str, code: str) -> str | None:
    words, hashes, options = _data()
    for kind, token, start in code_tokens(code, _tokens()):
        why = None
        if kind == "attribute" and "@[" in words:
            why = "the attribute command `@[`, which would end the proof"
        elif kind == "hash" and token in hashes:
            why = f"the command `{token}`, which would end the proof"
        elif kind == "ident":
            name = plain_name(token)
            if "«" not in token and token in words:
                why = f"the command keyword `{token}`, which would end the proof"
            elif name in SORRY_WORDS:
                why = f"`{token}`, which proves anything"
            elif name in options:
                why = f"the option `{name}`, which weakens what Lean checks"
        if why is not None:
            line = text[text.rfind("\n", 0, start) + 1:].split("\n", 1)[0].strip()
            return f"the tactic holds {why}: {line[:80]!r}"
    return None


def tactic_text_problem(tactics: Sequence[str]) -> str | None:
    """Why this tactic text must not reach Lean, or None. Every line of a tactic is placed at
    the block's column or right of it (`prover.env.proof_text`), so no line dedents out; a
    carriage return alone is refused, since the layout counts `\\n` only."""
    for tac in tactics:
        text = tac.replace("\r\n", "\n")
        if "\r" in text:
            return "the tactic holds a carriage return, which the proof's layout does not count as a line"
        problem = _problem(text)
        if problem is not None:
            return problem
    return None


def contains_sorry(text: str) -> bool:
    """Whether the code of `text` names `sorry`, `admit` or `sorryAx` (whole tokens: `h_admit`,
    `Foo.sorry` and `sorry'` are other names)."""
    return any(kind == "ident" and plain_name(token) in SORRY_WORDS
               for code in {mask_non_code(text), mask_non_code(text, interpolate_all=True)}
               for kind, token, _ in code_tokens(code, _tokens()))
