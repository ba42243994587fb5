"""Premises: a declaration of the corpus, rendered for retrieval as `<VAR> args <GOAL> goal`.

The retriever encodes a premise's arguments and its goal separately (fine-grained
similarity), so both parts are kept apart here. Our source-extracted corpora carry
`args`/`goal`; real LeanDojo corpora only carry `code`, so we split the signature ourselves.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

VAR_TOKEN = "<VAR>"
GOAL_TOKEN = "<GOAL>"

Pos = tuple[int, int]

_OPEN = {"(": ")", "{": "}", "[": "]", "⦃": "⦄", "⟨": "⟩"}
_CLOSE = set(_OPEN.values())
_MODIFIERS = ("private", "protected", "noncomputable", "partial", "unsafe", "nonrec", "scoped",
              "local")
_KEYWORD = re.compile(
    r"(?:theorem|lemma|def|abbrev|instance|structure|class\s+inductive|class\s+abbrev|class|"
    r"inductive|opaque|axiom|irreducible_def|alias|example)(?![\w.'!?])"
)
_WORD = re.compile(r"[^\s()\[\]{}⦃⦄⟨⟩:,\"]+")
_PRIORITY = re.compile(r"\(\s*priority\s*:=")
# Words that end the binder list of a declaration header.
_STOP_WORDS = {"where", "extends", "deriving", "with", "|", ":=", "=>"}


@dataclass(frozen=True, slots=True)
class Premise:
    full_name: str
    path: str
    start: Pos
    end: Pos
    kind: str
    code: str
    args: tuple[str, ...]
    goal: str
    doc: str = ""  # the doc comment, where the corpus has one (`prover data corpus` keeps it)
    derived_from: str = ""  # a `@[to_additive]` twin's multiplicative source, where the corpus says

    @property
    def args_text(self) -> str:
        return " ".join(self.args)

    def render(self) -> str:
        """The text both the retriever and the generator see for this premise."""
        return f"{VAR_TOKEN} {self.args_text} {GOAL_TOKEN} {self.goal}".strip()


def _skip_string(text: str, i: int) -> int:
    """Index just past the string literal opening at text[i] (a `"`)."""
    i += 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _skip_group(text: str, i: int) -> int:
    """Index just past the bracket group opening at text[i] (nesting- and string-aware)."""
    stack = [_OPEN[text[i]]]
    i += 1
    while i < len(text) and stack:
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
            continue
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif c == stack[-1]:
            stack.pop()
        i += 1
    return i


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _skip_header(code: str) -> tuple[int, str]:
    """Skip doc comments, `@[...]` attributes and modifiers; return (index after the
    declaration keyword, keyword), or (0, "") when no keyword is found."""
    i = _skip_space(code, 0)
    while True:
        if code.startswith("/-", i):
            j = code.find("-/", i + 2)
            if j < 0:
                return 0, ""
            i = _skip_space(code, j + 2)
        elif code.startswith("@[", i):
            i = _skip_space(code, _skip_group(code, i + 1))
        else:
            m = _WORD.match(code, i)
            if m and m.group() in _MODIFIERS:
                i = _skip_space(code, m.end())
                continue
            break
    m = _KEYWORD.match(code, i)
    if not m:
        return 0, ""
    return m.end(), m.group().split()[-1]


def split_signature(code: str) -> tuple[tuple[str, ...], str]:
    """Split declaration code into (binders, type after the top-level colon).

    `theorem foo {α : Type*} [Monoid α] (a : α) : a * 1 = a` gives
    (("{α : Type*}", "[Monoid α]", "(a : α)"), "a * 1 = a"). Doc comments, attributes
    (`@[simp]`, `@[aesop (rule_sets := [builtin]) safe]`), modifiers, an instance priority
    and universe parameters (`foo.{u}`) are skipped; bare binders (`abbrev M α := ...`) are
    kept as args; `extends ...` is skipped. A body after a top-level `:=`, `where` or match
    arms (`| pat => ...`) is dropped. For `alias a := b` the goal is `b`. Unparseable input
    degrades to ((), "") or a partial result instead of failing.
    """
    i, keyword = _skip_header(code)
    i = _skip_space(code, i)
    if _PRIORITY.match(code, i):  # instance (priority := 100) name ...
        i = _skip_space(code, _skip_group(code, i))
    if keyword == "alias" and code.startswith("⟨", i):  # alias ⟨mp, mpr⟩ := iff_theorem
        i = _skip_space(code, _skip_group(code, i))
    # The declaration name (absent for `instance : Foo` and `example`), with `.{u, v}`.
    while i < len(code) and not code[i].isspace() and code[i] != ":":
        if code[i] in _OPEN:
            if i > 0 and code[i - 1] == "." and code[i] == "{":
                i = _skip_group(code, i)
                continue
            break
        i += 1
    args: list[str] = []
    while True:
        i = _skip_space(code, i)
        if i >= len(code):
            break
        if code[i] in _OPEN:
            j = _skip_group(code, i)
            args.append(" ".join(code[i:j].split()))
            i = j
            continue
        m = _WORD.match(code, i)
        if keyword and m and m.group() not in _STOP_WORDS and not m.group().startswith((":", "|")):
            args.append(m.group())  # a bare binder: `abbrev ScriptT m := ...`
            i = m.end()
            continue
        break
    if code.startswith("extends", i):
        i = _skip_extends(code, i + len("extends"))
    if keyword == "alias" and code.startswith(":=", i):
        return tuple(args), " ".join(code[i + 2:].split())
    if i >= len(code) or code[i] != ":" or code.startswith(":=", i):
        return tuple(args), ""
    rest = code[i + 1:]
    return tuple(args), " ".join(_cut_body(rest).split())


def _skip_extends(text: str, i: int) -> int:
    """Index of the top-level `:`, `:=` or `where` ending an `extends A, B` clause."""
    while i < len(text):
        c = text[i]
        if c in _OPEN:
            i = _skip_group(text, i)
            continue
        if c == ":" or (text.startswith("where", i) and text[i - 1].isspace()):
            return i
        i += 1
    return i


def _is_word_at(text: str, i: int, word: str) -> bool:
    if not text.startswith(word, i):
        return False
    before = text[i - 1] if i > 0 else " "
    after = text[i + len(word)] if i + len(word) < len(text) else " "
    return before.isspace() and not (after.isalnum() or after in "_'.!?")


def _cut_body(text: str) -> str:
    """The type before a top-level `:=` (not a `let x :=` of the type itself), `where`,
    `deriving` or a match arm / constructor bar (`| pat => ...`; a bar with space on both
    sides, so `|a|` is kept)."""
    if ":=" not in text and "|" not in text and "where" not in text and "deriving" not in text:
        return text  # nothing can end the type (most theorem statements): no walk needed
    depth = 0
    lets = 0
    in_match = False  # `match x with | a => ..` inside the type: its bars are not arms
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
            continue
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif depth == 0:
            if text.startswith(":=", i):
                if lets == 0:
                    return text[:i]
                lets -= 1
                i += 2
                continue
            if c == "|" and not in_match and (i == 0 or text[i - 1].isspace()) and (
                    i + 1 == len(text) or text[i + 1].isspace()):
                return text[:i]
            if _is_word_at(text, i, "where") or _is_word_at(text, i, "deriving"):
                return text[:i]
            if _is_word_at(text, i, "let") or _is_word_at(text, i, "have"):
                lets += 1
            if _is_word_at(text, i, "match") or _is_word_at(text, i, "fun"):
                in_match = True
        i += 1
    return text
