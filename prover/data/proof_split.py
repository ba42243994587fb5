"""Split a Lean 4 proof's source text into the tactics LeanDojo traces as steps.

The granularity follows the real records (checked on `mathlib-src/leandojo-real/val.json`,
730 real tactics of 185 theorems, and on the 12 of those theorems whose source proof is also
in mathlib-src's val/test splits):

- A `·` focusing block is never a step; its inner tactics are. No real tactic starts with
  `·`, and `· rw [ha, zero_opow omega_ne_zero]\\n    exact Or.inr (Ordinal.zero_le b)` in
  Ordinal.eq_zero_or_opow_omega_le_of_mul_eq_right is traced as `rw [...]` and `exact ...`.
  So `·` blocks are flattened into their tactics, recursively. `case tag =>` and `next =>`
  blocks are flattened the same way: they are the named form of `·` and no real tactic
  starts with `case` or `next` either (an assumption: none of the 12 sources has one).
- `<;>` stays inside its step (17 real tactics, e.g. `cases o₁ <;> cases o₂ <;> decide`).
- `calc` with its steps is one step (3 real ones), so is `have h : T := by ...` with its
  nested block, `induction x with | ... => ...`, `conv => ...`, `all_goals ...`: LeanDojo
  also traces the nested tactics, at states we do not have; the goals a `have`, `show`,
  `suffices` or `calc` step states in the source are returned as `StatedGoal`s instead.
- A nested `by` inside a term stays inside its step (`exact ... (by decide)` is one real step).
- `;` at bracket depth 0 separates steps (`rw [add_comm]; exact ...` is two real steps); inside
  brackets it does not (`split <;> [rfl; simp [...]]` is one real step), nor after a `by`,
  `=>`, `↦` or a tactic that takes a tactic sequence (`· simp; ring` is one block).
- A line at the sequence's column still continues the step when Lean would read it so: it
  starts with `|`, `<;>`, `_ ` (a calc step), `else`, or the line above ends in `<;>`, `:=`,
  `,`, `calc`, `exact`, ... (they need more).
- Continuation lines are dedented by the step's column, as LeanDojo does (`_fix_indentation`).

Positions are character offsets into the proof text; comments are blanked (same length),
so spans stay valid for the premise annotations of that text.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

OPEN = "([{⟨⦃⟦⟪‹⁅«⟮"
CLOSE = ")]}⟩⦄⟧⟫›⁆»⟯"
_CLOSER = {c: o for o, c in zip(OPEN, CLOSE)}
# Tactics whose argument is a tactic sequence: a `;` after them belongs to that sequence.
_SEQ_HEADS = {"·", ".", "case", "case'", "next", "all_goals", "any_goals", "focus", "try",
              "repeat", "repeat'", "iterate", "classical", "on_goal", "conv", "conv_lhs", "conv_rhs"}
# A line starting with these continues the tactic above, even at the sequence's column
# (Lean checks columns for new tactics, not for these), and so does a line after one ending
# in a token that needs more (`foo <;>\n[t1; t2]`, `calc\na = b := p`, `set x :=\n{ ... }`);
# found in mathlib-src's train split, where such lines had made steps of their own.
_CONTINUATIONS = ("|", "<;>", "<|>", "_ ", "else", "then")
_OPEN_ENDED = re.compile(r"(?:<;>|<\|>|:=|=>|,|←|<\||\$|(?<![\w'.])"
                         r"(?:calc|show|from|exact|exacts|refine|refine'|apply|use|using|fun|λ))\s*$")
_IDENT = re.compile(r"[^\s()\[\]{}⟨⟩⦃⦄,;:]+")
_RELATION = re.compile(r"[=≠<>≤≥↔⊆⊂⊇⊃∣≡≃≅≈⟶]")
_NOT_RELATION = {"=>", "<|", "|>", "<;>", "<|>", ">>=", "<$>", "<*>", "<-", "->", "<=>"}
_MOD_SUFFIX = re.compile(r"\[[A-Z]*MOD\b")
_HAVE_HEADS = {"have", "haveI", "replace", "obtain"}
_TERM_CHAIN = {"have", "haveI", "let", "letI", "suffices", "show", "calc", "obtain"}


@dataclass(frozen=True)
class Tactic:
    """A step: its text (comments removed, continuation lines dedented) and its span."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class StatedGoal:
    """A goal the source states (`have h : T`, `show T`, `suffices h : T`, a `calc` step) and
    the tactic that starts its proof: the first tactic of its `by` block, `exact <term>` for a
    term, or the next tactic of the sequence when the source gives no body."""

    kind: str  # have | show | suffices | calc
    goal: str  # T as written, whitespace collapsed
    target: Tactic


@dataclass(frozen=True)
class ProofSplit:
    mode: str  # "tactic" (a `by` proof), "term", or "equations" (`| pat => ...`: nothing taken)
    tactics: tuple[Tactic, ...]  # the steps of a `by` proof; () for a term proof
    term: Tactic | None  # a term proof as `exact <term>`; None for a `by` proof
    goals: tuple[StatedGoal, ...]


def blank_comments(text: str) -> str:
    """`text` with `--` and (nested) `/- -/` comments replaced by spaces, newlines kept, so
    offsets do not move. String literals are respected."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = _string_end(text, i)
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/-", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/-", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("-/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out[i:j] = ["\n" if ch == "\n" else " " for ch in text[i:j]]
            i = j
        else:
            i += 1
    return "".join(out)


def _string_end(text: str, i: int) -> int:
    """Index just past the string literal opening at `i`."""
    j = i + 1
    while j < len(text) and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return min(j + 1, len(text))


class _Source:
    """The proof text with what the scanners need: comments blanked, string contents masked,
    bracket depth before every character, and line starts."""

    def __init__(self, proof: str):
        self.text = blank_comments(proof)
        shape = list(self.text)
        i = 0
        while i < len(self.text):  # mask string contents: brackets or `;` in them mean nothing
            if self.text[i] == '"':
                j = _string_end(self.text, i)
                shape[i + 1:j - 1] = "_" * max(0, j - i - 2)
                i = j
            else:
                i += 1
        self.shape = "".join(shape)
        self.depth = [0] * (len(self.shape) + 1)
        d = 0
        for k, ch in enumerate(self.shape):
            self.depth[k] = d
            if ch in OPEN:
                d += 1
            elif ch in _CLOSER:
                d = max(0, d - 1)  # unbalanced text must not poison the rest
        self.depth[len(self.shape)] = d
        self.line_start = [0] * (len(self.text) + 1)
        s = 0
        for k, ch in enumerate(self.text):
            self.line_start[k] = s
            if ch == "\n":
                s = k + 1
        self.line_start[len(self.text)] = s

    def col(self, i: int) -> int | None:
        """Column of offset `i`; None on the first line, whose offset in the file is unknown."""
        return None if self.line_start[i] == 0 else i - self.line_start[i]

    def starts_line(self, i: int) -> bool:
        return not self.text[self.line_start[i]:i].strip()

    def skip_ws(self, i: int, end: int) -> int:
        while i < end and self.text[i].isspace():
            i += 1
        return i

    def rstrip(self, start: int, end: int) -> int:
        while end > start and self.text[end - 1].isspace():
            end -= 1
        return end

    def word_at(self, i: int, end: int) -> str:
        m = _IDENT.match(self.shape, i, end)
        return m.group() if m else self.shape[i:i + 1]

    def is_token(self, i: int, word: str, end: int) -> bool:
        """`word` at `i`, not inside a longer identifier."""
        j = i + len(word)
        if self.shape[i:j] != word or j > end:
            return False
        before = self.shape[i - 1] if i > 0 else " "
        after = self.shape[j] if j < len(self.shape) else " "
        return not (_ident_char(before) or _ident_char(after))

    def find_token(self, word: str, start: int, end: int, depth: int | None = None) -> int | None:
        """First `word` token in [start, end) at bracket depth `depth` (default: start's)."""
        depth = self.depth[start] if depth is None else depth
        i = self.shape.find(word, start, end)
        while i >= 0:
            if self.depth[i] == depth and self.is_token(i, word, end):
                return i
            i = self.shape.find(word, i + 1, end)
        return None

    def find_assign(self, start: int, end: int) -> int | None:
        """The first `:=` in [start, end) at start's depth."""
        depth = self.depth[start]
        i = self.shape.find(":=", start, end)
        while i >= 0:
            if self.depth[i] == depth:
                return i
            i = self.shape.find(":=", i + 2, end)
        return None

    def find_colon(self, start: int, end: int) -> int | None:
        """The first type-ascription `:` (not `:=`, `::`) in [start, end) at start's depth."""
        depth = self.depth[start]
        for i in range(start, end):
            if (self.shape[i] == ":" and self.depth[i] == depth
                    and self.shape[i + 1:i + 2] not in ("=", ":") and self.shape[i - 1:i] != ":"):
                return i
        return None

    def tactic(self, start: int, end: int, prefix: str = "") -> Tactic:
        """The text of [start, end) as a step: comments gone, blank lines dropped, continuation
        lines dedented by the step's column (LeanDojo's rule). On the proof's first line the
        column is unknown, and after a `prefix` (`exact `) dedenting by it could put a line at
        the column of `exact`: then the lines keep their shape, the least indented at 2."""
        end = self.rstrip(start, end)
        lines = self.text[start:end].split("\n")
        rest = [ln.rstrip() for ln in lines[1:] if ln.strip()]
        col = self.col(start)
        if col is not None and not prefix:
            cut = col
        else:
            cut = max(0, min((len(ln) - len(ln.lstrip(" ")) for ln in rest), default=0) - 2)
        out = [prefix + lines[0].rstrip()]
        for ln in rest:
            k = 0
            while k < cut and k < len(ln) and ln[k] == " ":
                k += 1
            out.append(ln[k:])
        return Tactic("\n".join(out), start, end)

    def collapse(self, start: int, end: int) -> str:
        return " ".join(self.text[start:end].split())


def _ident_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_'!?.₀₁₂₃₄₅₆₇₈₉"


def _split_seq(src: _Source, start: int, end: int, col: int | None) -> list[tuple[int, int]]:
    """Items of the tactic sequence in [start, end): split at a line, at the bracket depth of
    `start`, indented exactly `col` (None: the column is unknown, lines never split), and
    at such a `;` (not `<;>`) unless the item so far takes a tactic sequence itself."""
    base = src.depth[start]
    items: list[tuple[int, int]] = []
    cur = src.skip_ws(start, end)
    i = cur
    while i < end:
        ch = src.shape[i]
        if src.depth[i] != base:
            i += 1
            continue
        if ch == ";" and src.shape[i - 1:i] != "<" and not _takes_sequence(src, cur, i):
            items.append((cur, i))
            cur = i = src.skip_ws(i + 1, end)
            continue
        if ch == "\n" and col is not None:
            j = src.skip_ws(i, end)
            # In valid Lean a sequence's tactics share one column; a line indented otherwise
            # inside the sequence's extent continues a tactic (`simpa using\n      foo`).
            if (j < end and src.col(j) == col and not src.shape.startswith(_CONTINUATIONS, j)
                    and not _OPEN_ENDED.search(src.shape, cur, i)):
                items.append((cur, i))
                cur = i = j
                continue
        i += 1
    items.append((cur, end))
    out = []
    for s, e in items:
        e = src.rstrip(s, e)
        if e > s:
            out.append((s, e))
    return out


def _takes_sequence(src: _Source, start: int, end: int) -> bool:
    if src.word_at(start, end) in _SEQ_HEADS:
        return True
    # After `by`, `=>` or `↦` a `;` may belong to the nested block or the function's body
    # (`fun i ↦ letI := t i; inferInstance`): keep it in the item, which errs on the side of
    # a longer step rather than a broken one.
    return (src.find_token("by", start, end) is not None or src.shape.find("=>", start, end) >= 0
            or src.shape.find("↦", start, end) >= 0)


def _block(src: _Source, start: int, end: int) -> list[tuple[int, int]]:
    """The steps of the tactic block whose first tactic is at `start`, `·`/`case`/`next`
    blocks flattened into their tactics."""
    start = src.skip_ws(start, end)
    if start >= end:
        return []
    out: list[tuple[int, int]] = []
    for s, e in _split_seq(src, start, end, src.col(start)):
        out.extend(_flatten(src, s, e))
    return out


def _flatten(src: _Source, start: int, end: int) -> list[tuple[int, int]]:
    ch = src.shape[start]
    if ch in "·." and (start + 1 == end or src.shape[start + 1].isspace()):
        return _block(src, start + 1, end)
    if src.word_at(start, end) in ("case", "case'", "next"):
        k = src.shape.find("=>", start, end)
        if k >= 0 and src.depth[k] == src.depth[start]:
            return _block(src, k + 2, end)
    return [(start, end)]


def _body_target(src: _Source, start: int, end: int) -> tuple[Tactic | None, list[StatedGoal]]:
    """The tactic that starts the proof in [start, end) (`by` block: its first tactic;
    term: `exact <term>`), and the goals stated inside a `by` block."""
    start = src.skip_ws(start, end)
    end = src.rstrip(start, end)
    if start >= end:
        return None, []
    if src.is_token(start, "by", end):
        steps = _block(src, start + 2, end)
        if not steps:
            return None, []
        return src.tactic(*steps[0]), _goals_in_sequence(src, steps, term_mode=False)
    return src.tactic(start, end, prefix="exact "), []


def _goals_in_sequence(src: _Source, items: list[tuple[int, int]], term_mode: bool) -> list[StatedGoal]:
    """Goals stated by the items of one sequence (tactic steps, or a term's `have` chain)."""
    goals: list[StatedGoal] = []
    for idx, (s, e) in enumerate(items):
        # What proves a goal the item states without a body: the next tactic, or in a term's
        # chain the rest of the term.
        next_target = None
        if idx + 1 < len(items):
            next_target = src.tactic(*items[idx + 1], prefix="exact " if term_mode else "")
        head = src.word_at(s, e)
        if head in _HAVE_HEADS:
            goals.extend(_have_goals(src, head, s, e, next_target))
        elif head == "suffices":
            goals.extend(_suffices_goals(src, s, e, next_target))
        goals.extend(_calc_anywhere(src, s, e))
        goals.extend(_show_goals(src, s, e, next_target))
    return goals


def _have_goals(src: _Source, head: str, s: int, e: int, next_target: Tactic | None) -> list[StatedGoal]:
    """`have h : T := body` / `have h : T` (Mathlib: T becomes the next goal)."""
    after = s + len(head)
    colon = src.find_colon(after, e)
    assign = src.find_assign(after, e)
    if colon is None or (assign is not None and assign < colon):
        return []  # `have h := v`: no stated type
    name = src.text[after:colon].strip()
    # A name, an anonymous-constructor pattern, or nothing: binders would make the goal a Pi.
    if head != "obtain" and name and not (name.startswith("⟨") or (" " not in name and name[0] not in OPEN)):
        return []
    t_end = assign if assign is not None else e
    goal = src.collapse(colon + 1, t_end)
    if not goal:
        return []
    if assign is None:
        target, inner = next_target, []
    else:
        target, inner = _body_target(src, assign + 2, e)
    return ([StatedGoal("have", goal, target)] if target else []) + inner


def _suffices_goals(src: _Source, s: int, e: int, next_target: Tactic | None) -> list[StatedGoal]:
    """`suffices h : T by tacs` / `from e`: what follows in the sequence proves T."""
    by = src.find_token("by", s, e)
    frm = src.find_token("from", s, e)
    ends = [k for k in (by, frm) if k is not None]
    if not ends:
        return []  # Mathlib's bodyless `suffices`: the next goal is the old one
    t_end = min(ends)
    colon = src.find_colon(s + 8, t_end)
    goal = src.collapse((colon + 1) if colon is not None else s + 8, t_end)
    target = next_target
    return [StatedGoal("suffices", goal, target)] if goal and target else []


def _show_goals(src: _Source, s: int, e: int, next_target: Tactic | None) -> list[StatedGoal]:
    """Every `show T` in the item: `show T from e` / `show T by tacs` anywhere (as in
    `rw [show a = b by ring]`); a bodyless `show T` heading a tactic: the next tactic."""
    goals: list[StatedGoal] = []
    pos = s
    while True:
        k = src.shape.find("show", pos, e)
        if k < 0:
            break
        pos = k + 4
        if not src.is_token(k, "show", e):
            continue
        depth = src.depth[k]
        stop = _term_end(src, k, e, depth)
        by = src.find_token("by", k + 4, stop, depth)
        frm = src.find_token("from", k + 4, stop, depth)
        ends = [x for x in (by, frm) if x is not None]
        if ends:
            t_end = min(ends)
            goal = src.collapse(k + 4, t_end)
            if t_end == by:
                target, inner = _body_target(src, by, stop)
            else:
                target, inner = _body_target(src, frm + 4, stop)
            if goal and target:
                goals.append(StatedGoal("show", goal, target))
            goals.extend(inner)
        elif k == s:
            goal = src.collapse(k + 4, e)
            target = next_target
            if goal and target:
                goals.append(StatedGoal("show", goal, target))
    return goals


def _term_end(src: _Source, k: int, e: int, depth: int) -> int:
    """Where a term starting at `k` (at bracket depth `depth`) ends inside [k, e): at the
    closing bracket of its enclosure or a `,` of it, else at `e`."""
    for i in range(k, e):
        if src.depth[i] == depth and (src.shape[i] in _CLOSER or src.shape[i] == ","):
            return i
        if src.depth[i] < depth:
            return i
    return e


def _relation_rhs(src: _Source, start: int, end: int) -> str | None:
    """The right-hand side of the relation in [start, end): the text after the first token
    at start's depth that is a relation symbol (`=`, `≤`, `<`, `↔`, `=ᵐ[μ]`, ...)."""
    depth = src.depth[start]
    i = start
    while i < end:
        if src.depth[i] == depth and (i == start or src.shape[i - 1].isspace()) and _RELATION.match(src.shape, i):
            j = i
            while j < end and not src.shape[j].isspace():
                j += 1
            if src.shape[i:j] not in _NOT_RELATION:
                rhs = src.collapse(j, end)
                return None if not rhs or _MOD_SUFFIX.search(rhs) else rhs
            i = j
        i += 1
    return None


def _calc_goals(src: _Source, start: int, end: int) -> list[StatedGoal]:
    """`calc a = b := p\\n _ = c := q`: the goals `a = b` and `b = c`, proved by p and q."""
    first = src.skip_ws(start, end)
    if first >= end:
        return []
    later = [j for j in range(first, end) if src.shape[j] == "\n" and src.depth[j] == src.depth[first]]
    cols = [src.col(src.skip_ws(j, end)) for j in later if src.skip_ws(j, end) < end]
    if src.starts_line(first) and src.col(first) is not None:
        col = src.col(first)
    else:
        col = min((c for c in cols if c is not None), default=None)
    goals: list[StatedGoal] = []
    prev_rhs: str | None = None
    for s, e in _split_calc_steps(src, first, end, col):
        assign = src.find_assign(s, e)
        rel_end = assign if assign is not None else e
        rel = src.collapse(s, rel_end)
        if rel.startswith("_ ") or rel == "_":
            goal = f"{prev_rhs} {rel[1:].strip()}" if prev_rhs else None
        else:
            goal = rel
        rhs = _relation_rhs(src, s, rel_end)
        if assign is None:  # `calc a` then `_ = b := p`: the first term only
            prev_rhs = rel if not rel.startswith("_") else None
            continue
        prev_rhs = None if rhs == "_" else rhs
        if goal is None or rhs in (None, "_"):
            continue
        target, inner = _body_target(src, assign + 2, e)
        if target:
            goals.append(StatedGoal("calc", goal, target))
        goals.extend(inner)
    return goals


def _calc_anywhere(src: _Source, s: int, e: int) -> list[StatedGoal]:
    """The steps of every `calc` in the item: heading it (to the item's end) or inside a term
    (`foo $ calc ...`, `(calc ...)`, to the end of its enclosure)."""
    goals: list[StatedGoal] = []
    k = src.shape.find("calc", s, e)
    while k >= 0:
        if src.is_token(k, "calc", e):
            end = e if k == s else _term_end(src, k, e, src.depth[k])
            goals.extend(_calc_goals(src, k + 4, end))
        k = src.shape.find("calc", k + 4, e)
    return goals


def _split_calc_steps(src: _Source, start: int, end: int, col: int | None) -> list[tuple[int, int]]:
    """Steps start at lines (at the calc's depth) indented at most `col`; `_ = ...` lines too."""
    base = src.depth[start]
    bounds = [start]
    for j in range(start, end):
        if src.shape[j] == "\n" and src.depth[j] == base:
            k = src.skip_ws(j, end)
            if k < end and col is not None and (src.col(k) or 0) <= col:
                bounds.append(k)
    bounds.append(end)
    return [(a, src.rstrip(a, b)) for a, b in itertools.pairwise(bounds) if src.rstrip(a, b) > a]


def split_proof(proof: str) -> ProofSplit:
    """The steps of a `by` proof, or a term proof as `exact <term>`, with the goals stated in
    the source (see the module doc for the granularity)."""
    src = _Source(proof)
    start = src.skip_ws(0, len(proof))
    end = src.rstrip(start, len(proof))
    if src.is_token(start, "by", end):
        steps = _block(src, start + 2, end)
        return ProofSplit("tactic", tuple(src.tactic(s, e) for s, e in steps), None,
                          _distinct(_goals_in_sequence(src, steps, term_mode=False)))
    if src.shape.startswith("|", start) or end <= start:
        # Equations (`| 0 => ... | n + 1 => ...`): no term to `exact`, and each case's goal
        # is the statement at a pattern we do not instantiate.
        return ProofSplit("equations", (), None, ())
    term = src.tactic(start, end, prefix="exact ")
    if src.word_at(start, end) in _TERM_CHAIN:
        # A `have`/`suffices` chain: its items sit at the least indentation of its lines.
        cols = [src.col(src.skip_ws(j, end)) for j in range(start, end)
                if src.shape[j] == "\n" and src.depth[j] == src.depth[start]]
        col = min((c for c in cols if c is not None), default=None)
        items = _split_seq(src, start, end, col)
    else:
        items = [(start, end)]
    goals = _goals_in_sequence(src, items, term_mode=True)
    return ProofSplit("term", (), term, _distinct(goals))


def _distinct(goals: list[StatedGoal]) -> tuple[StatedGoal, ...]:
    """Each goal once, in source order: the scan for `show`/`calc` inside a step also sees
    those of its nested `by` blocks, which the recursion into them finds again."""
    return tuple(sorted(dict.fromkeys(goals), key=lambda g: (g.target.start, g.target.end, g.kind)))
