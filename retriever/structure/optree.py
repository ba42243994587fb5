"""Operator trees of Lean terms, read without Lean: a goal, a hypothesis, a premise's statement.

A Pratt parser over Lean's surface syntax as the pretty-printer and Mathlib's source write it:
binders (`∀ ∃ fun λ`, binder groups `(x y : α)`, `{x}`, `[inst : C α]`, `⦃x⦄`, binder
predicates `∀ x ∈ s,`), application, infix/prefix/postfix notation with Lean's precedences
(notation.py), parentheses and tuples, anonymous constructors `⟨a, b⟩`, set-builder
`{x | p x}` and set literals, big operators (`∑ x ∈ s, f x`, `⋃ i, s i`, `∫ x, f x ∂μ`),
`|x|`, `‖x‖`, `⌊x⌋`, `if then else`.

It never fails: a span it cannot read (a bracket group, or the whole term) becomes a `…` node
whose children are the span's tokens as leaves, and `Tree.fallbacks` counts such spans, so the
share of trees with a fallback can be reported (benchmarks/structure_retrieval.py).

Nodes are labelled by what a matching query would share with a premise: an application by its
head (`Finset.card s`; a projection `(f x).comp` by `.comp`), notation by its symbol, a binder
by its quantifier. Types in ascriptions `(n : ℝ)` are dropped, as the pretty-printer drops or
adds them freely. features.py abstracts variables and shortens names.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from retriever.structure.notation import MAX, Notation, fallback, symbols, table

# Characters Lean does not allow in identifiers but writes right after one: superscript
# modifier letters (`sᶜ`, `αᵒᵈ`, `Mᵀ`, `×ˢ`).
_MODIFIER = "\u02B0-\u02FF\u1D2C-\u1D61\u1D6B-\u1DBF"
_ID_START = rf"(?![{_MODIFIER}])[^\W\d]"
_ID_CHAR = rf"(?![{_MODIFIER}])[\w'!?✝⁰¹²³⁴⁵⁶⁷⁸⁹]"
_ATOM = rf"(?:«[^»]*»|{_ID_START}(?:{_ID_CHAR})*)"
_IDENT = re.compile(rf"{_ATOM}(?:\.(?:{_ATOM}|\d+))*")
_PROJ = re.compile(rf"\.(?:{_ATOM}|\d+)(?:\.(?:{_ATOM}|\d+))*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SPACE = re.compile(r"\s+")
_UNIVERSES = re.compile(r"\.\{[^{}]*\}")
_OPENERS = {"(": ")", "[": "]", "![": "]", "{": "}", "⟨": "⟩", "⦃": "⦄", "⟦": "⟧", "⌊": "⌋", "⌈": "⌉"}
_CLOSERS = {"⌋₊", "⌉₊"} | set(_OPENERS.values())
_PUNCT = (":=", "=>", "//", "..", "‖₊", ",", ":", "|", "‖", "↦", ";", "⊢", "·", "@")
# Sub- and superscripts that extend a symbol: `→ₗ`, `≃ₐ`, `=ᶠ`, `∀ᶠ`.
_MOD = re.compile(rf"[\u2080-\u209C{_MODIFIER}]")
_SYMBOL_RUN = re.compile(rf"(?:[^\w\s()\[\]{{}}⟨⟩⦃⦄⟦⟧⌊⌋⌈⌉,:|‖;·@\"]|[\u2080-\u209C{_MODIFIER}])+")

# Leading symbols or words that bind variables, with the precedence their body is read at
# (Mathlib's big operators read `term:67`; `⋃`, `⨆` and `∫` read `r:60`).
BINDERS = {"∀": 0, "∃": 0, "∃!": 0, "Π": 0, "Σ": 0, "Π₀": 0, "fun": 0, "λ": 0, "∀ᶠ": 0, "∃ᶠ": 0,
           "∀ᵐ": 0, "∃ᵐ": 0,
           "∑": 67, "∏": 67, "∑'": 67, "∏'": 67, "∑ᶠ": 67, "∏ᶠ": 67, "⋃": 60, "⋂": 60, "⨆": 60, "⨅": 60,
           "⨁": 67, "∫": 60, "∫⁻": 60, "∮": 60}
_LAMBDAS = {"fun", "λ"}
KEYWORDS = {"then", "else", "in", "with", "at", "from", "do", "by", "if", "let", "have", "show",
            "match", "fun", "λ", "where", "deriving"}
_SORTS = {"Type", "Sort", "Prop"}
# Notation read as a name: number types (`ℝ≥0∞`) and constants (`⊤`, `∅`, `⋯` the elided proof).
_NAMES = re.compile(r"ℝ≥0∞|ℝ≥0|ℚ≥0|ℕ∞|ℕ\+|\?[\w.]+|⋯")
NULLARY = {"⊤", "⊥", "∅", "∞", "⋯", "𝟙", "𝟭"}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # id, num, str, sym, open, close, punct, proj
    text: str
    spaced: bool = True  # whitespace (or the start) before it: `→ₗ[R]` glues, `l ++ [a]` does not


@dataclass(frozen=True, slots=True)
class Node:
    label: str
    children: tuple[Node, ...] = ()
    # id (a name), num, lit (a string), op (notation), app, bind, group (tuples, ⟨⟩, {}),
    # seq (a fallback: the children are the unread span's tokens)
    kind: str = "id"

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            yield from c.walk()

    def __str__(self) -> str:
        return self.label if not self.children else f"{self.label}({', '.join(map(str, self.children))})"


@dataclass(frozen=True)
class Tree:
    root: Node
    fallbacks: int = 0  # spans read as a leaf sequence
    bound: frozenset[str] = field(default_factory=frozenset)  # names its binders introduce


@lru_cache(maxsize=1)
def _known_symbols() -> re.Pattern[str]:
    """The table's symbols and the binder symbols, longest first, as one pattern."""
    known = sorted(set(symbols()) | set(BINDERS) - {"fun", "λ"}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, known)))


def tokenize(text: str) -> list[Token]:
    """Lean tokens of `text`; every character lands in some token (unknown ones as symbols)."""
    known = _known_symbols()
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        m = _SPACE.match(text, i)
        if m:
            i = m.end()
            continue
        if out and out[-1].kind == "id" and (m := _UNIVERSES.match(text, i)):
            i = m.end()  # `Category.{v, u}`: universe levels are not part of the shape
            continue
        tok = _read_token(text, i, out[-1] if out else None, known)
        out.append(Token(tok.kind, tok.text, i == 0 or text[i - 1].isspace()))
        i += len(tok.text)
    return out


def _read_token(text: str, i: int, prev: Token | None, known: re.Pattern[str]) -> Token:
    """The token at text[i] (not a space); `prev`, the one before it."""
    c = text[i]
    if c == '"' and (m := _STRING.match(text, i)):
        return Token("str", m.group())
    if text.startswith("![", i):
        return Token("open", "![")
    if m := _NAMES.match(text, i):
        return Token("id", m.group())
    if c in _OPENERS:
        return Token("open", c)
    if c in "⌋⌉" and text.startswith("₊", i + 1):
        return Token("close", c + "₊")
    if c in _CLOSERS:
        return Token("close", c)
    if c == "." and prev is not None and prev.kind in ("close", "id") and (m := _PROJ.match(text, i)):
        return Token("proj", m.group())
    if (m := _IDENT.match(text, i)) and not _MOD.match(c):
        word = m.group()
        return Token("id", word)
    if m := _NUMBER.match(text, i):
        return Token("num", m.group())
    sym = m.group() if (m := known.match(text, i)) else None
    if sym and sym in _PUNCT and sym != "‖":
        sym = None
    punct = next((p for p in _PUNCT if text.startswith(p, i)), None)
    if punct and (sym is None or len(punct) >= len(sym)):
        if punct == "‖" and text.startswith("‖₊", i):
            punct = "‖₊"
        return Token("punct", punct)
    run = _SYMBOL_RUN.match(text, i)
    # A longer run of symbols is one operator (`→⋆ₐ`, `<+`, `→ₗ`) unless the table's match
    # is a prefix or postfix, which stacks unspaced (`↑↑x`, `x⁻¹`).
    longer = run is not None and len(run.group()) > len(sym or "") and sym is not None and (
        _MOD.match(text, i + len(sym)) is not None
        or not any((sym, role) in table() for role in ("prefix", "postfix")))
    if sym and not longer:
        return Token("sym", sym)
    if run:
        return Token("sym", run.group())
    return Token("sym", c)


def _matches(tokens: list[Token]) -> list[int]:
    """For each opening bracket, the index of its closer (-1 when unbalanced); -1 elsewhere."""
    match = [-1] * len(tokens)
    stack: list[int] = []
    for j, t in enumerate(tokens):
        if t.kind == "open":
            stack.append(j)
        elif t.kind == "close":
            if stack and _OPENERS[tokens[stack[-1]].text] == t.text.rstrip("₊"):
                match[stack.pop()] = j
            else:
                stack.clear()  # unbalanced: what is open stays unmatched
    return match


class ParseError(Exception):
    pass


def _leaf(t: Token) -> Node:
    return Node(t.text, (), {"num": "num", "str": "lit"}.get(t.kind, "id"))


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.t = tokens
        self.match = _matches(tokens)
        self.i = 0
        self.end = len(tokens)
        self.fallbacks = 0
        self.bound: set[str] = set()

    # -- helpers
    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.t[j] if j < self.end else None

    def is_text(self, text: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok is not None and tok.text == text and tok.kind in ("punct", "id", "sym")

    def expect(self, text: str) -> None:
        if not self.is_text(text):
            raise ParseError(f"expected {text!r} at token {self.i}")
        self.i += 1

    def sub(self, lo: int, hi: int, read: Callable[[], Node]) -> Node:
        """`read()` over tokens [lo, hi) alone; a failure or leftover tokens fall back to a `…`
        node of the span's leaves (counted), so one unread group spoils only itself."""
        saved = (self.i, self.end)
        self.i, self.end = lo, hi
        try:
            node = read()
            if self.i < hi:
                raise ParseError("leftover tokens")
        except (ParseError, RecursionError):
            self.fallbacks += 1
            node = Node("…", tuple(_leaf(t) for t in self.t[lo:hi]), "seq")
        self.i, self.end = saved
        return node

    def group_end(self) -> int:
        j = self.match[self.i]
        if j < 0 or j >= self.end:
            raise ParseError("unbalanced bracket")
        return j

    # -- expressions
    def expr(self, prec: int = 0, stop: frozenset[str] = frozenset()) -> Node:
        left = self.leading(stop)
        while (tok := self.peek()) is not None and tok.text not in stop:
            if tok.kind == "punct" and tok.text == ".." and prec <= 60:  # an interval `a..b`
                self.i += 1
                left = Node("..", (left, self.expr(61, stop)), "op")
                continue
            if tok.kind == "proj":
                self.i += 1
                left = Node(tok.text, (left,), "app")  # `.comp`: features.py reads the field
                continue
            if tok.kind == "sym":
                post = table().get((tok.text, "postfix"))
                if post is None and all(_MOD.match(ch) for ch in tok.text):
                    post = Notation(tok.text, "postfix", MAX, "a superscript modifier (ˣ, ᵒᵖ)")
                if post is not None:
                    if post.prec < prec:
                        break
                    self.i += 1
                    left = Node(tok.text, (left,), "op")
                    continue
                op = self.binary(tok.text)
                if op is not None:
                    if op.prec < prec:
                        break
                    self.i += 1
                    label = tok.text
                    nxt = self.peek()
                    if nxt is not None and nxt.text == "[" and nxt.kind == "open" and not nxt.spaced:
                        # `→ₗ[R]`, `=ᶠ[l]`, `≃ₐ[k]`: the bracket belongs to the operator
                        j = self.group_end()
                        inner = self.sub(self.i + 1, j, lambda: self.expr(0))
                        self.i = j + 1
                        right = self.expr(op.right_prec, stop)
                        left = Node(label + "[]", (left, inner, right), "op")
                        continue
                    right = self.expr(op.right_prec, stop)
                    left = Node(label, (left, right), "op")
                    continue
            if prec < MAX and self.starts_arg(tok, stop):
                args = []
                while (a := self.peek()) is not None and a.text not in stop and self.starts_arg(a, stop):
                    args.append(self.expr(MAX, stop) if a.text not in _LAMBDAS else self.leading(stop))
                if left.kind == "id":
                    left = Node(left.label, tuple(args), "app")
                elif left.kind == "app" and left.label != "@":  # `(map f) p` is `map f p`
                    left = Node(left.label, left.children + tuple(args), "app")
                else:
                    left = Node("@", (left, *args), "app")
                continue
            break
        return left

    @staticmethod
    def binary(text: str) -> Notation | None:
        op = table().get((text, "binary"))
        if op is not None:
            return op
        if (text, "prefix") in table() or text in BINDERS or text in NULLARY or text in ("!", "∂"):
            return None
        return fallback(text)

    def starts_arg(self, tok: Token, stop: frozenset[str]) -> bool:
        if tok.kind in ("num", "str"):
            return True
        if tok.kind == "id":
            return tok.text not in KEYWORDS or tok.text in _LAMBDAS
        if tok.kind == "open":
            return True
        if tok.kind == "punct":
            return tok.text in ("|", "‖", "·") and tok.text not in stop
        if tok.kind == "sym":
            pre = table().get((tok.text, "prefix"))
            return pre is not None and pre.prec >= MAX or tok.text == "¬" or tok.text in NULLARY
        return False

    def leading(self, stop: frozenset[str]) -> Node:
        tok = self.peek()
        if tok is None:
            raise ParseError("expected a term")
        if tok.kind == "punct" and tok.text == "@":
            self.i += 1
            return self.leading(stop)
        if tok.kind in ("num", "str"):
            self.i += 1
            return _leaf(tok)
        if tok.kind == "id":
            if tok.text in _LAMBDAS or tok.text in BINDERS:
                return self.binder(tok.text)
            if tok.text == "if":
                return self.ite(stop)
            if tok.text == "by":  # a proof inside a term: not part of the formula's shape
                self.i = self.end
                return Node("by", (), "id")
            if tok.text in KEYWORDS:
                raise ParseError(f"keyword {tok.text}")
            self.i += 1
            if tok.text in _SORTS:
                if self.is_text("*"):
                    self.i += 1
                return Node(tok.text, (), "id")
            return _leaf(tok)
        if tok.kind == "open":
            return self.group()
        if tok.kind == "punct":
            if tok.text == "·":
                self.i += 1
                return Node("·", (), "id")
            if tok.text in ("|", "‖"):
                self.i += 1
                closer = {"|": ("|",), "‖": ("‖", "‖₊")}[tok.text]
                inner = self.expr(0, stop | frozenset(closer))
                end = self.peek()
                if end is None or end.text not in closer:
                    raise ParseError("unclosed bars")
                self.i += 1
                return Node(f"{tok.text}·{end.text}", (inner,), "op")
            raise ParseError(f"unexpected {tok.text!r}")
        if tok.kind == "sym":
            if tok.text in BINDERS:
                return self.binder(tok.text)
            nxt = self.peek(1)
            if tok.text in NULLARY or nxt is None or nxt.kind == "close" or nxt.text == ",":
                self.i += 1  # a constant, or an operator as a term: `(↑)`, `(· < ·)`'s `(<)`
                return Node(tok.text, (), "id")
            pre = table().get((tok.text, "prefix"))
            if pre is not None:
                self.i += 1
                return Node(tok.text, (self.expr(pre.prec, stop),), "op")
        raise ParseError(f"unexpected {tok.text!r}")

    def items(self, hi: int) -> list[Node]:
        """Comma-separated terms up to `hi`, each maybe ascribed (`x : T`, the type dropped)."""
        out = []
        while self.i < hi:
            if self.peek().kind == "id" and self.is_text(":=", 1):
                self.i += 2  # a named argument `(n := 2)`: its value is what the term holds
            out.append(self.expr(0))
            if self.is_text(":"):
                self.i += 1
                self.expr(0)
            if self.is_text(","):
                self.i += 1
            elif self.i < hi:
                raise ParseError("expected ','")
        return out

    def group(self) -> Node:
        opener = self.peek().text
        j = self.group_end()
        lo = self.i + 1
        closer = self.t[j].text
        if opener == "{":
            node = self.braces(lo, j)
        elif opener == "(":
            node = self.sub(lo, j, lambda: self._tuple(j))
        else:
            label = {"[": "[]", "![": "![]", "⟨": "⟨⟩", "⦃": "⦃⦄", "⟦": "⟦⟧"}.get(opener, opener + closer)
            node = self.sub(lo, j, lambda: Node(label, tuple(self.items(j)), "group"))
        self.i = j + 1
        return node

    def _tuple(self, hi: int) -> Node:
        parts = self.items(hi)
        if len(parts) == 1:
            return parts[0]
        return Node("(,)" if parts else "()", tuple(parts), "group")

    def _depth0(self, lo: int, hi: int, text: str) -> int:
        j = lo
        while j < hi:
            if self.t[j].kind == "open" and self.match[j] > j:
                j = self.match[j] + 1
                continue
            if self.t[j].text == text and self.t[j].kind in ("punct", "id"):
                return j
            j += 1
        return -1

    def braces(self, lo: int, hi: int) -> Node:
        if self._depth0(lo, hi, "with") >= 0 or self._depth0(lo, hi, ":=") >= 0:
            # a structure instance: fields, not a formula
            return self.sub(lo, hi, lambda: (_ for _ in ()).throw(ParseError("structure instance")))
        sub = self._depth0(lo, hi, "//")
        if sub >= 0:
            def subtype() -> Node:
                self.bound.update(t.text for t in self.t[lo:sub] if t.kind == "id")
                self.i = sub + 1
                return Node("Subtype", (self.expr(0),), "bind")
            return self.sub(lo, hi, subtype)
        bar = self._depth0(lo, hi, "|")
        if bar < 0:
            return self.sub(lo, hi, lambda: Node("{}", tuple(self.items(hi)), "group"))

        def set_builder() -> Node:
            names_lo = self.i
            pattern = self.expr(0, frozenset({"|"}))
            self.bound.update(t.text for t in self.t[names_lo:bar] if t.kind == "id")
            domain: tuple[Node, ...] = ()
            if self.is_text(":"):
                self.i += 1
                domain = (self.expr(0, frozenset({"|"})),)
            elif pattern.kind == "op" and pattern.label in ("∈", "⊆", "<", "≤") and len(pattern.children) == 2:
                domain = (Node(pattern.label, (pattern.children[1],), "op"),)
            self.expect("|")
            body = self.expr(0)
            return Node("setOf", (*domain, body), "bind")
        return self.sub(lo, hi, set_builder)

    def binder(self, word: str) -> Node:
        """`∀ x y : α, body`, `∃ x ∈ s, body`, `fun (x : α) ↦ body`, `∑ i in s, f i`, ...:
        the binder types and predicates, then the body."""
        self.i += 1
        ends = ("=>", "↦") if word in _LAMBDAS else (",",)
        parts: list[Node] = []
        while True:
            tok = self.peek()
            if tok is None:
                raise ParseError("unfinished binder")
            if tok.text in ends and tok.kind == "punct":
                self.i += 1
                break
            if tok.kind == "id" and tok.text not in KEYWORDS:
                self.bound.add(tok.text)
                self.i += 1
            elif tok.kind == "open":
                j = self.group_end()
                colon = self._depth0(self.i + 1, j, ":")
                if colon >= 0:
                    self.bound.update(t.text for t in self.t[self.i + 1:colon] if t.kind == "id")
                    parts.append(self.sub(colon + 1, j, lambda: self.expr(0)))
                elif tok.text == "[":  # an anonymous instance binder
                    parts.append(self.sub(self.i + 1, j, lambda: self.expr(0)))
                else:  # `{x}`, `⟨a, b⟩`, `(x)`: names or a pattern
                    self.bound.update(t.text for t in self.t[self.i + 1:j] if t.kind == "id")
                self.i = j + 1
            elif tok.text == ":":
                self.i += 1
                parts.append(self.expr(0))
            elif tok.text == "∂":  # `∀ᵐ x ∂μ, p`
                self.i += 1
                parts.append(Node("∂", (self.expr(MAX),), "op"))
            elif tok.text == "in" or (tok.kind == "sym" and self.binary(tok.text) is not None):
                self.i += 1
                rel = "∈" if tok.text == "in" else tok.text
                parts.append(Node(rel, (self.expr(51),), "op"))
            else:
                raise ParseError(f"unexpected {tok.text!r} in a binder")
        body = self.expr(BINDERS.get(word, 0))
        if word.startswith("∫") and self.is_text("∂"):
            self.i += 1
            parts.append(Node("∂", (self.expr(MAX),), "op"))
        return Node("fun" if word == "λ" else word, (*parts, body), "bind")

    def ite(self, stop: frozenset[str]) -> Node:
        self.i += 1
        if self.peek() is not None and self.peek().kind == "id" and self.is_text(":", 1):
            self.i += 2  # `if h : c then`
        cond = self.expr(0)
        self.expect("then")
        yes = self.expr(0)
        self.expect("else")
        return Node("ite", (cond, yes, self.expr(0, stop)), "op")


def parse(text: str) -> Tree:
    """The operator tree of one Lean term. Never raises: unread spans become `…` nodes."""
    p = _Parser(tokenize(text))
    if not p.t:
        return Tree(Node("…", (), "seq"), 1)
    root = p.sub(0, len(p.t), lambda: p.expr(0))
    return Tree(root, p.fallbacks, frozenset(p.bound))



@dataclass(frozen=True)
class Statement:
    """The trees of a proof state's hypotheses and goal, or of a premise's binders and
    conclusion; `locals` are the names they declare (hypotheses, binder names)."""

    hypotheses: tuple[Tree, ...]
    goals: tuple[Tree, ...]
    locals: frozenset[str]

    @property
    def trees(self) -> tuple[Tree, ...]:
        return self.hypotheses + self.goals


def state_trees(state: str) -> Statement:
    """Each hypothesis type and each goal of a pretty-printed state, as a tree."""
    from prover.data.state import parse_state
    hyps, goals, names = [], [], set()
    for case in parse_state(state):
        for h in case.hypotheses:
            names.update(h.names.split())
            # a `let` hypothesis `x : α := v`: its type is what a premise can match
            hyps.append(parse(h.type.split(" := ", 1)[0]))
        if case.goal:
            goals.append(parse(case.goal))
    return Statement(tuple(hyps), tuple(goals), frozenset(names))


_BINDER = re.compile(r"^[({\[⦃](.*)[)}\]⦄]$", re.S)


def statement_trees(args: tuple[str, ...] | list[str], goal: str) -> Statement:
    """A premise's binders (`(h : p x)`, `{α : Type*}`, `[Group G]`) and conclusion as trees:
    a binder's type is a hypothesis, its names are locals."""
    hyps, names = [], set()
    for arg in args:
        m = _BINDER.match(arg.strip())
        inner = m.group(1) if m else arg
        head, colon, typ = inner.split(" := ", 1)[0].partition(" : ")  # drop a default value
        if not colon and arg.strip().startswith("["):
            typ, head = inner, ""  # `[Group G]`: an anonymous instance
        elif not colon:
            names.update(inner.split())
            continue
        names.update(head.split())
        hyps.append(parse(typ))
    return Statement(tuple(hyps), (parse(goal),) if goal.strip() else (), frozenset(names))
