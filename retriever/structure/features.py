"""Structure terms of operator trees, for BM25: Approach0's leaf-to-root paths and subtree shapes.

Names a state or premise declares (hypotheses, binder names, bound variables) and names that
read as variables (`x`, `h₁`, `inst✝`, `R`) are abstracted to `V`, so `a * b = b * a` and
`x * y = y * x` give the same terms; constants keep their last dotted component
(`Finset.card s` and `s.card` both read `card(V)`). The terms of a tree:

- `P:` leaf-to-root path prefixes of 2 to 4 labels (`V/*/=`): Approach0's paths, cut short so
  that a premise's conclusion matches inside a larger goal; an operator that is not
  commutative marks which operand the path came from (`V/≤.1`);
- `S:` each internal node with its children's labels (`≤(V,+)`), operands of a commutative
  operator sorted;
- `T:` each internal node's two-level skeleton, leaves blanked (`≤(_,+(_,_))`).

The bag of labels alone (what BM25 already reads) is left out: on leandojo-real/select, six
variants were compared once by hand (with or without labels, paths only, the state's
hypotheses in the query or not, a premise's binder types in its document or not), and this
one, without labels, premises with their binder types, states by their goals alone, ranked
best; the differences were a point or two, inside the noise.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from retriever.structure.optree import Node, Statement, Tree

COMMUTATIVE = {"+", "*", "=", "≠", "∧", "∨", "↔", "∪", "∩", "⊔", "⊓", "(,)", "{}", "≈", "∆"}
_DECOR = re.compile(r"[✝'⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉\d_]+$")
# Short names that are constants, not variables.
_CONSTANTS = {"ℕ", "ℤ", "ℚ", "ℝ", "ℂ", "π", "id", "ne", "gcd", "lcm", "exp", "log", "sin", "cos",
              "deg", "ker", "Ioo", "Icc", "Ico", "Ioc", "Ici", "Iic", "Ioi", "Iio"}
PATH_LENGTHS = (2, 3, 4)


def var_like(name: str) -> bool:
    """A name that reads as a variable: marked inaccessible (`x✝`), or one or two letters
    (after dropping primes, subscripts and digits) that are not a known constant."""
    if "✝" in name or name.startswith("?"):
        return True
    if "." in name or name in _CONSTANTS:
        return False
    base = _DECOR.sub("", name) or name
    return len(base) <= 2 and base not in _CONSTANTS


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1] if "." in name and not name[0].isdigit() else name


def normalize(node: Node, local: frozenset[str] | set[str]) -> Node:
    """`node` with variables abstracted to `V`, constants shortened, and a field of a local
    (`p.degrees`, `hf.comp g`) read as the field applied to it."""
    def is_var(name: str) -> bool:
        return name in local or var_like(name)

    def head(name: str, args: tuple[Node, ...], kind: str) -> Node:
        if name.startswith("."):  # `(f x).comp`: a projection of what it is applied to
            return Node(_short(name[1:]), args, "app")
        first = name.split(".", 1)[0]
        if "." in name and is_var(first):  # `p.degrees`, `hf.comp g`
            rest = name[len(first) + 1:]
            return Node(_short(rest), (Node("V"), *args), "app")
        if name == "@":
            return Node(name, args, kind)
        if is_var(name):
            return Node("V@" if args else "V", args, kind if args else "id")
        return Node(_short(name), args, kind)

    kids = tuple(normalize(c, local) for c in node.children)
    if node.kind == "num":
        return Node(node.label if len(node.label) <= 2 else "N", (), "num")
    if node.kind == "lit":
        return Node("S", (), "lit")
    if node.kind in ("id", "app"):
        return head(node.label, kids, node.kind)
    return Node(node.label, kids, node.kind)


def _edge(parent: Node, index: int) -> str:
    if parent.kind == "op" and len(parent.children) > 1 and parent.label not in COMMUTATIVE:
        return f"{parent.label}.{index}"
    return parent.label


def _shape(node: Node) -> str:
    labels = [c.label for c in node.children]
    if node.label in COMMUTATIVE:
        labels.sort()
    return f"{node.label}({','.join(labels)})"


def _skeleton(node: Node) -> str:
    parts = [f"{c.label}({','.join(g.label if g.children else '_' for g in c.children)})"
             if c.children else "_" for c in node.children]
    if node.label in COMMUTATIVE:
        parts.sort()
    return f"{node.label}({','.join(parts)})"


def tree_terms(root: Node) -> list[str]:
    """The structure terms of one normalized tree."""
    out: list[str] = []

    def visit(node: Node, up: list[str]) -> None:
        if not node.children:
            path = [node.label] + up
            out.extend("P:" + "/".join(path[:k]) for k in PATH_LENGTHS if len(path) >= k)
            return
        out.append("S:" + _shape(node))
        out.append("T:" + _skeleton(node))
        for i, c in enumerate(node.children):
            visit(c, [_edge(node, i)] + up)

    visit(root, [])
    return out


def statement_terms(s: Statement, hypotheses: bool = True) -> list[str]:
    """The terms of a state's or premise's trees (goals only when `hypotheses` is False)."""
    local = s.locals | frozenset().union(*(t.bound for t in s.trees)) if s.trees else s.locals
    trees: Iterable[Tree] = s.trees if hypotheses else s.goals
    out: list[str] = []
    for t in trees:
        out.extend(tree_terms(normalize(t.root, local)))
    return out
