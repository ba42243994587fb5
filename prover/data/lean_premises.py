"""The premises one Lean file adds to a LeanDojo-format corpus, read from its source text.

Built on `prover.data.lean_decls` (declarations, namespaces, constructors, fields) and going
where LeanDojo's corpus (Lean's own constants) goes beyond named declarations:

- `private` names as Lean mangles them (`_private.<Module>.0.<name>`, as LeanDojo records them);
- `@[to_additive]` twins (and `attribute [to_additive] x`): the name from an explicit argument,
  else from the `#align` line that follows the declaration (Mathlib before 2025 has them), else
  guessed as Mathlib's `guessName` would (`prover.data.to_additive`), said in the row
  (`to_additive_name`: explicit, align, guessed); `def_pos` is the explicit name, or the
  `to_additive` word, as Lean's declaration ranges of the twin;
- `alias a := b` and `alias ⟨a, b⟩ := iff`; `@[simps p q]` lemmas named `<decl>_p`, and for a
  bare `@[simps]` the lemmas of the fields its body writes (`{ obj := …, map := … }` or
  `where obj := …`: `<decl>_obj`, `<decl>_map`; a field given `by` a proof makes none, and
  `toFun`/`invFun` are named `apply`/`symm_apply` as simps's default projections of a function
  coercion), counted as read from the body;
- `@[reassoc]` (and `attribute [reassoc] x`): the `<decl>_assoc` lemma;
- `variable` binders in scope that the statement names go in front of its `args`.

Each premise row carries LeanDojo's fields (full_name, code, start, end, kind), `def_pos` /
`def_end_pos` (the name's span, as in LeanDojo's annotated tactics), `args` and `goal`. What the
source cannot settle is counted in `FileScan.uncertain`, never guessed silently.
"""
from __future__ import annotations

import bisect
import functools
import re
from collections import Counter
from dataclasses import dataclass, field

from prover.data.lean_decls import THEOREM_KINDS, Declaration, LeanFile, _depth0
from prover.data.lean_text import _block_comment_end, _string_end
from prover.data.premise import split_signature
from prover.data.to_additive import twin_name

CODE_CHARS = 2000  # a non-theorem's code past this is cut (with ⋯), as the reference corpora

# What `FileScan.uncertain` counts (metadata.json `uncertain`).
ANONYMOUS_INSTANCE = "anonymous instances (Lean names them; not listed)"
TWIN_GUESSED = "to_additive names guessed (no explicit name, no #align)"
TWIN_NAMESPACE_GUESSED = "to_additive namespaces guessed (no known twin of the namespace)"
TWIN_TARGET_UNKNOWN = "attribute [to_additive] on a name this file does not declare (namespace assumed)"
SIMPS_IMPLICIT = "@[simps] without projection names whose body writes no fields (generated lemmas not listed)"
SIMPS_FROM_BODY = "@[simps] lemmas named from the fields the body writes (nested projections not listed)"
PARENT_NOTATION = "extends a parent written as notation (its toX projection not listed)"
IRREDUCIBLE_DEF_EQN = "irreducible_def equations (<name>_def, not listed)"

_MODIFIER_WORDS = frozenset(("private", "protected", "noncomputable", "nonrec", "partial", "unsafe",
                             "scoped", "local"))
_ID = r"[^\W\d][\w'!?₀-₉ₐ-ₜ]*(?:\.[^\W\d][\w'!?₀-₉ₐ-ₜ]*)*"
_IDENT = re.compile(_ID)
_TO_ADDITIVE = re.compile(r"(?<![\w.])to_additive(?![\w'])")
_SIMPS = re.compile(r"(?<![\w.])simps!?(?![\w'])")
_REASSOC = re.compile(r"(?<![\w.])reassoc(?![\w'])")
_FIELD = re.compile(r"(?:^|(?<=[,{\n]))[ \t]*(" + _ID + r")[ \t]*(?:[^:=\n,{}]*?)?:=[ \t\n]*")
# Fields of Mathlib's bundled structures that hold proofs (simps makes no lemma of them); a
# primed field (`map_mul'`) is one by Mathlib's naming convention.
_PROOF_FIELDS = frozenset(("left_inv", "right_inv", "map_id", "map_comp", "naturality", "hom_inv_id",
                           "inv_hom_id", "map_rel_iff", "inj", "comm", "w"))
# simps's default names for the projections of a bundled function (its coercion and inverse).
_SIMPS_RENAMED = {"toFun": "apply", "invFun": "symm_apply"}
_ALIGN = re.compile(r"^#align[ \t]+\S+[ \t]+(\S+)", re.MULTILINE)
_ATTRIBUTE_CMD = re.compile(r"^attribute[ \t]*\[", re.MULTILINE)
_ALIAS_CMD = re.compile(r"^((?:@\[[^\n]*\][ \t\n]*)?(?:(?:private|protected|noncomputable)[ \t]+)*)alias\b",
                        re.MULTILINE)
_SCOPE_CMD = re.compile(r"^(?:noncomputable[ \t]+)?(namespace|section|end)\b[ \t]*([^\s\-]*)", re.MULTILINE)
_VARIABLE_CMD = re.compile(r"^variable\b", re.MULTILINE)
_NEXT_COMMAND = re.compile(r"^(?!\s)(?=\S)", re.MULTILINE)
_OPEN_BR, _CLOSE_BR = "([{⦃⟨", ")]}⦄⟩"
_EXTENDS = re.compile(r"(?<![\w'])extends(?![\w'])")


@dataclass
class FileScan:
    """The premise rows of one file, and what could not be read with certainty."""

    rows: list[dict]
    uncertain: Counter = field(default_factory=Counter)
    counts: Counter = field(default_factory=Counter)  # private names, twins, aliases, ...
    translations: dict[str, str] = field(default_factory=dict)  # to_additive: src -> twin


# -- small helpers ----------------------------------------------------------------------------

def _matching_open(code: str, close: int) -> int | None:
    """Index of the `[`/`(` matching the bracket at `close` (scanning back)."""
    depth = 0
    for i in range(close, -1, -1):
        c = code[i]
        if c in _CLOSE_BR:
            depth += 1
        elif c in _OPEN_BR:
            depth -= 1
            if depth == 0:
                return i
    return None


def _matching_close(code: str, open_: int, stop: int) -> int:
    depth = 0
    for i in range(open_, stop):
        c = code[i]
        if c in _OPEN_BR:
            depth += 1
        elif c in _CLOSE_BR:
            depth -= 1
            if depth == 0:
                return i
    return stop


def modifiers_start(code: str, start: int) -> int:
    """Where the attributes and modifiers in front of a declaration keyword begin (`@[simp]
    private theorem`: the `@`); the docstring before them is not included, as in LeanDojo."""
    i = start
    begin = start
    while True:
        j = i
        while j > 0 and code[j - 1].isspace():
            j -= 1
        if j == 0:
            return begin
        if code[j - 1] == "]":
            o = _matching_open(code, j - 1)
            if o is None or o == 0 or code[o - 1] != "@":
                return begin
            i = begin = o - 1
            continue
        k = j
        while k > 0 and (code[k - 1].isalnum() or code[k - 1] == "_"):
            k -= 1
        if code[k:j] in _MODIFIER_WORDS:
            i = begin = k
            continue
        return begin


def docstring_before(text: str, start: int) -> str:
    """The doc comment (`/-- ... -/`) right before `start` (the declaration's attributes and
    modifiers, or a field's name), whitespace collapsed; "" when there is none. LeanDojo's
    `code` drops it, and it is the one place Mathlib says in words what a declaration is."""
    j = start
    while j > 0 and text[j - 1].isspace():
        j -= 1
    if not text.startswith("-/", j - 2):
        return ""
    k = text.rfind("/--", 0, j - 2)
    # A `-/` between them means the comment that ends here is not that doc comment.
    if k < 0 or "-/" in text[k + 3:j - 2]:
        return ""
    return " ".join(text[k + 3:j - 2].split())


def strip_comments(text: str) -> str:
    """`text` without its comments (strings kept), trailing spaces dropped."""
    if "--" not in text and "/-" not in text:  # most statements: no lexing needed
        return re.sub(r"[ \t]+\n", "\n", text).strip()
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/-", i):
            i = _block_comment_end(text, i)
        elif text[i] == '"':
            j = _string_end(text, i + 1)
            out.append(text[i:j])
            i = j
        else:
            out.append(text[i])
            i += 1
    return re.sub(r"[ \t]+\n", "\n", "".join(out)).strip()


# -- scopes and variables --------------------------------------------------------------------

@dataclass
class _Scopes:
    """The namespace stack and `variable` binders at any index of a file (column-0 commands)."""

    starts: list[int]
    namespaces: list[tuple[str, ...]]
    variables: list[tuple[int, int, list[str]]]  # (command start, scope end, its binder groups)

    @classmethod
    def scan(cls, code: str) -> _Scopes:
        events = [(m.start(), m) for m in _SCOPE_CMD.finditer(code)]
        events += [(m.start(), m) for m in _VARIABLE_CMD.finditer(code)]
        events.sort(key=lambda e: e[0])
        stack: list[list] = []  # [kind, name, variables opened in it]
        top: list = []  # variables outside any scope
        starts, spaces = [0], [()]
        variables: list[list] = []
        for at, m in events:
            if m.re is _VARIABLE_CMD:
                nxt = _NEXT_COMMAND.search(code, m.end())
                var = [at, len(code), code[m.end():nxt.start() if nxt else len(code)]]
                variables.append(var)
                (stack[-1][2] if stack else top).append(var)
                continue
            kind, name = m.group(1), m.group(2)
            if kind == "end":
                k = len(stack) - 1
                if name:
                    while k >= 0 and stack[k][1] != name and not stack[k][1].endswith("." + name):
                        k -= 1
                    k = k if k >= 0 else len(stack) - 1
                for closed in stack[max(k, 0):]:
                    for var in closed[2]:  # a `variable` lives until its scope's `end`
                        var[1] = at
                del stack[max(k, 0):]
            else:
                stack.append([kind, name, []])
            starts.append(m.end())
            spaces.append(tuple(n for k_, n, _ in stack if k_ == "namespace" and n))
        return cls(starts, spaces, [(a, b, _binder_groups(text)) for a, b, text in variables])

    def namespace_at(self, index: int) -> str:
        k = bisect.bisect_right(self.starts, index) - 1
        return ".".join(self.namespaces[k])

    def binders_at(self, index: int) -> list[str]:
        out = []
        for start, end, groups in self.variables:
            if start < index < end:
                out += groups
        return out


def _binder_groups(text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        if text[i] in "([{⦃":
            j = _matching_close(text, i, len(text))
            out.append(" ".join(text[i:j + 1].split()))
            i = j + 1
        else:
            i += 1
    return out


@functools.lru_cache(maxsize=4096)
def _binder_names(group: str) -> list[str]:
    inner = group[1:-1]
    if group.startswith("[") or ":" not in inner:
        return [] if group.startswith("[") else inner.split()
    return inner.split(":", 1)[0].split()


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[^\W\d][\w'₀-₉]*", text))


def used_binders(binders: list[str], statement: str) -> list[str]:
    """The `variable` binders a statement uses: those whose names it mentions, the binders
    their types mention, and the instance binders over them (Lean's inclusion rule, roughly)."""
    if not binders:
        return []
    words = set(re.findall(r"[^\W\d][\w'₀-₉]*", statement))
    chosen = [False] * len(binders)
    for _ in range(3):  # names pulled in through other binders' types
        for k, b in enumerate(binders):
            if chosen[k]:
                continue
            names = _binder_names(b)
            if names and words & set(names):
                chosen[k] = True
                words |= _words(b)
    for k, b in enumerate(binders):
        if b.startswith("[") and _words(b) & words:
            names = {n for j, bb in enumerate(binders) if chosen[j] for n in _binder_names(bb)}
            chosen[k] = bool(_words(b) & names)
    return [b for k, b in enumerate(binders) if chosen[k]]


# -- the file ---------------------------------------------------------------------------------

class _Builder:
    def __init__(self, f: LeanFile, module: str, known: dict[str, str]) -> None:
        self.f = f
        self.module = module
        self.known = known
        self.scan = FileScan([])
        self.scopes = _Scopes.scan(f.code)
        self.names: set[str] = set()
        self.aligns = [(m.start(), m.group(1)) for m in _ALIGN.finditer(f.code)]
        self.align_names = {n for _, n in self.aligns}

    def row(self, name: str, kind: str, start: int, end: int, code_end: int, n0: int, n1: int,
            extra: dict | None = None) -> dict | None:
        if name in self.names:
            return None
        self.names.add(name)
        f = self.f
        code = strip_comments(f.text[start:code_end])
        if kind not in THEOREM_KINDS and len(code) > CODE_CHARS:
            code = code[:CODE_CHARS] + " ⋯"
        args, goal = split_signature(code)
        binders = used_binders(self.scopes.binders_at(start), code)
        row = {"full_name": name, "code": code, "start": f.leandojo_pos(start), "end": f.leandojo_pos(end),
               "kind": kind, "def_pos": f.leandojo_pos(n0), "def_end_pos": f.leandojo_pos(n1),
               "args": [*binders, *args], "goal": goal, **(extra or {})}
        doc = docstring_before(f.text, start)
        if doc and "doc" not in row:
            row["doc"] = doc
        self.scan.rows.append(row)
        return row

    def mangle(self, name: str, private: bool) -> str:
        if not private:
            return name
        self.scan.counts["private names (as _private.<module>.0.<name>)"] += 1
        return f"_private.{self.module}.0.{name}"

    def declaration(self, d: Declaration) -> None:
        f, code = self.f, self.f.code
        if d.name is None:
            if d.kind == "instance":
                self.scan.uncertain[ANONYMOUS_INSTANCE] += 1
            return
        if d.kind in ("ctor", "field"):
            self.row(d.name, d.kind, d.start, d.end, d.end, d.name_start, d.name_end)
            return
        if d.kind in ("structure", "class"):
            self.parents(d)
        m0 = modifiers_start(code, d.start)
        mods = code[m0:d.start]
        private = re.search(r"(?<![\w.])private(?![\w'])", mods) is not None
        name = self.mangle(d.name, private)
        stmt_end = d.proof_start if d.kind in THEOREM_KINDS else d.end
        kind = d.kind
        row = self.row(name, kind, m0, d.end, stmt_end, d.name_start, d.name_end)
        if kind == "irreducible_def":
            self.scan.uncertain[IRREDUCIBLE_DEF_EQN] += 1
        if row is None:
            return
        self.body = _body_start(code, d.name_end, d.end)
        for a in _attribute_args(mods, m0):
            self.attribute(a, d.name, row, m0, d.end, stmt_end)

    def parents(self, d: Declaration) -> None:
        """`structure S extends A x, B` makes the fields `S.toA`, `S.toB`."""
        code = self.f.code
        m = _EXTENDS.search(code, d.name_end, d.end)
        if m is None:
            return
        stop = next((i for i in _depth0(code, m.end(), d.end) if code.startswith(("where", ":=", ":"), i)), d.end)
        k = m.end()
        cuts = [i for i in _depth0(code, m.end(), stop) if code[i] == ","] + [stop]
        for c in cuts:
            parent = code[k:c]
            lead = len(parent) - len(parent.lstrip())
            head = _IDENT.match(parent.strip())
            rest = parent.strip()[head.end():] if head else ""
            top = "".join(rest[i] for i in _depth0(rest, 0, len(rest)))  # arguments in brackets: anything
            if head is None or re.search(r"[^\w\s'.,()\[\]{}_⦃⦄]", top):
                self.scan.uncertain[PARENT_NOTATION] += 1
            else:
                n0 = k + lead
                field = "to" + head.group().rsplit(".", 1)[-1]
                if self.row(f"{d.name}.{field}", "field", n0, n0 + len(parent.strip()),
                            n0 + len(parent.strip()), n0, n0 + head.end()) is not None:
                    self.scan.counts["parent projections (extends)"] += 1
            k = c + 1

    def attribute(self, attr: tuple[str, int, int], src: str, row: dict, start: int, end: int,
                  stmt_end: int) -> None:
        """One attribute of a declaration: `to_additive` makes a twin, `simps p q` lemmas."""
        text, a0, a1 = attr
        code = self.f.code
        if (m := _TO_ADDITIVE.match(code, a0)) and m.end() <= a1:
            self.twin(src, code, m.start(), m.end(), a1, row, start, end, stmt_end)
        elif (m := _REASSOC.match(code, a0)) and m.end() <= a1:
            if self.row(f"{row['full_name']}_assoc", "reassoc", start, end, stmt_end, m.start(), m.end(),
                        {"derived_from": row["full_name"]}) is not None:
                self.scan.counts["@[reassoc] lemmas"] += 1
        elif (m := _SIMPS.match(code, a0)) and m.end() <= a1:
            names = [(w.group(), a0 + w.start()) for w in _IDENT.finditer(text, m.end() - a0)
                     if not _in_parens(text, w.start()) and w.group() not in ("config",)]
            if not names:
                body = getattr(self, "body", None)
                names = [(_SIMPS_RENAMED.get(f, f), m.start()) for f in written_fields(code, *body)] if body else []
                if names:
                    self.scan.uncertain[SIMPS_FROM_BODY] += len(names)
                else:
                    self.scan.uncertain[SIMPS_IMPLICIT] += 1
            extra = {"simps_projection": "body"} if names and at_body(names, m.start()) else None
            for proj, at in names:
                self.row(f"{row['full_name']}_{proj}", "simps", start, end, stmt_end, at, at + len(proj), extra)
                self.scan.counts["@[simps] lemmas"] += 1

    def twin(self, src: str, code: str, word0: int, word1: int, stop: int, row: dict, start: int,
             end: int, stmt_end: int) -> None:
        """The additive twin of `src` from the `to_additive` word at [word0, word1) and its
        arguments up to `stop`: `(attr := ..)`, `existing`, `self`, an explicit name."""
        i = word1
        explicit, e0 = None, None
        while i < stop:
            while i < stop and code[i].isspace():
                i += 1
            if i < stop and code[i] == "(":  # (attr := simp), (reorder := 1 2)
                i = _matching_close(code, i, stop) + 1
                continue
            break
        m = _IDENT.match(code, i) if i < stop else None
        if m and m.end() <= stop:
            word = m.group()
            if word == "existing":  # the twin is declared elsewhere: a translation only
                i = m.end()
                while i < stop and code[i].isspace():
                    i += 1
                m2 = _IDENT.match(code, i)
                if m2 and m2.end() <= stop:
                    self.known[src] = twin_name(src, m2.group(), self.known)[0]
                else:
                    self.known[src] = twin_name(src, None, self.known)[0]
                return
            if word == "self":
                return
            explicit, e0 = word, m.start()
        name, ns_guessed = twin_name(src, explicit, self.known)
        how = "explicit"
        if explicit is None:
            aligned = self._aligned_twin(src, end)
            if aligned is not None:
                name, ns_guessed, how = aligned, False, "align"
                self.scan.counts["to_additive names from #align"] += 1
            else:
                how = "guessed"
                self.scan.uncertain[TWIN_GUESSED] += 1
        if ns_guessed:
            how += ", namespace guessed"
            self.scan.uncertain[TWIN_NAMESPACE_GUESSED] += 1
        self.known[src] = name
        private = row["full_name"].startswith("_private.")
        n0, n1 = (e0, e0 + len(explicit)) if explicit else (word0, word1)
        if self.row(self.mangle(name, private), "to_additive", start, end, stmt_end, n0, n1,
                    {"derived_from": row["full_name"], "to_additive_name": how}) is not None:
            self.scan.counts["to_additive twins"] += 1

    def _aligned_twin(self, src: str, end: int) -> str | None:
        """The `#align` target right after a declaration that is not the declaration itself:
        its additive twin's Lean 4 name (Mathlib ported from Lean 3 writes both)."""
        k = bisect.bisect_left(self.aligns, (end, ""))
        found = []
        while k < len(self.aligns):
            at, name = self.aligns[k]
            between = self.f.code[end:at]
            if between.strip() and not all(line.strip().startswith("#align") or not line.strip()
                                           for line in between.splitlines()):
                break
            if name != src:
                found.append(name)
            end = self.f.code.find("\n", at)
            end = len(self.f.code) if end < 0 else end
            k += 1
        return found[0] if len(found) == 1 else None

    def attribute_commands(self) -> None:
        """`attribute [to_additive x] y` (and `[simps ...]`): twins of declarations named later."""
        code = self.f.code
        for m in _ATTRIBUTE_CMD.finditer(code):
            o = m.end() - 1
            c = _matching_close(code, o, len(code))
            nxt = _NEXT_COMMAND.search(code, c + 1)
            stop = nxt.start() if nxt else len(code)
            targets = [(t.group(), c + 1 + t.start()) for t in _IDENT.finditer(code[c + 1:stop])]
            for attr in _attribute_args(code[o - 1:c + 1], o - 1):
                if _REASSOC.match(code, attr[1]):
                    for target, _ in targets:
                        src = self._resolve(target, m.start())
                        if self.row(f"{src}_assoc", "reassoc", m.start(), stop, stop, attr[1],
                                    attr[1] + len("reassoc"), {"derived_from": src}) is not None:
                            self.scan.counts["@[reassoc] lemmas"] += 1
                    continue
                if not _TO_ADDITIVE.match(code, attr[1]):
                    continue
                for target, _ in targets:
                    src = self._resolve(target, m.start())
                    rows = [r for r in self.scan.rows if r["full_name"] in (src, self._private_name(src))]
                    if not rows:
                        self.scan.uncertain[TWIN_TARGET_UNKNOWN] += 1
                        row = {"full_name": src}
                        r0, r1, s1 = m.start(), stop, stop
                    else:
                        row = rows[0]
                        r0 = self.f.index(row["start"][0], row["start"][1] - 1) or m.start()
                        r1 = self.f.index(row["end"][0], row["end"][1] - 1) or stop
                        s1 = r1
                    self.twin(src, code, attr[1], attr[1] + len("to_additive"), attr[2], row, r0, r1, s1)

    def _private_name(self, name: str) -> str:
        return f"_private.{self.module}.0.{name}"

    def _resolve(self, written: str, at: int) -> str:
        if written.startswith("_root_."):
            return written[len("_root_."):]
        ns = self.scopes.namespace_at(at)
        parts = ns.split(".") if ns else []
        for k in range(len(parts), -1, -1):
            cand = ".".join([*parts[:k], written])
            if cand in self.names or self._private_name(cand) in self.names:
                return cand
        return ".".join([*parts, written])

    def aliases(self) -> None:
        code = self.f.code
        for m in _ALIAS_CMD.finditer(code):
            start = m.start()
            nxt = _NEXT_COMMAND.search(code, m.end())
            stop = nxt.start() if nxt else len(code)
            body_end = len(code[:stop].rstrip())
            head = code[m.end():stop]
            lhs = head.split(":=", 1)[0] if ":=" in head else head.split("←", 1)[-1]
            ns = self.scopes.namespace_at(m.start())
            private = "private" in m.group(1)
            for w in _IDENT.finditer(lhs):
                n0 = m.end() + w.start()
                written = w.group()
                if written == "_":  # `alias ⟨_, mpr⟩ := iff`: no alias for that side
                    continue
                full = written[len("_root_."):] if written.startswith("_root_.") else \
                    ".".join(p for p in (ns, written) if p)
                if self.row(self.mangle(full, private), "alias", start, body_end, body_end, n0,
                            n0 + len(written)) is not None:
                    self.scan.counts["aliases"] += 1


def at_body(names: list[tuple[str, int]], word: int) -> bool:
    """Whether simps's projection names came from the body (each placed at the `simps` word)."""
    return all(at == word for _, at in names)


def _body_start(code: str, name_end: int, end: int) -> tuple[int, int] | None:
    """Where a definition's value starts (after its depth-0 `:=` or `where`) and its end."""
    for i in _depth0(code, name_end, end):
        if code.startswith(":=", i):
            return i + 2, end
        if code.startswith("where", i) and not (code[i - 1].isalnum() or code[i - 1] in "_'.") and \
                not code[i + 5: i + 6].isalnum():
            return i + 5, end
    return None


def written_fields(code: str, start: int, end: int) -> list[str]:
    """The fields a structure value writes, in order: `{ a := …, b := … }` (not `{ s with …}`'s
    source) or a `where` block's `a := …`; a field proved `by` a tactic block is left out
    (simps makes no lemma of a proof). Only the value's top level is read."""
    body = code[start:end]
    text = body.lstrip()
    if text.startswith("{"):
        close = _matching_close(text, 0, len(text))
        inner = text[1:close]
        if " with" in inner.split(":=", 1)[0]:
            inner = inner.split(" with", 1)[1]
        top = [i for i in _depth0(inner, 0, len(inner))]
        flat = "".join(inner[i] if i in set(top) else " " for i in range(len(inner)))
    else:
        top = set(_depth0(body, 0, len(body)))
        flat = "".join(body[i] if i in top else " " for i in range(len(body)))
        inner = body
    out = []
    for m in _FIELD.finditer(flat):
        if inner[m.end():].startswith("by") and not inner[m.end() + 2: m.end() + 3].isalnum():
            continue
        if m.group(1) in _PROOF_FIELDS or m.group(1).endswith("'"):  # Mathlib's proof fields
            continue
        out.append(m.group(1))
    return list(dict.fromkeys(out))


def _in_parens(text: str, i: int) -> bool:
    return text[:i].count("(") > text[:i].count(")")


def _attribute_args(mods: str, offset: int) -> list[tuple[str, int, int]]:
    """The attributes of `@[a, b (x := y), c]` blocks (and `attribute [..]`): (text, start, end)
    as indices into the file, split at depth-0 commas."""
    out = []
    i = 0
    while True:
        o = mods.find("[", i)
        if o < 0:
            return out
        c = _matching_close(mods, o, len(mods))
        depth, s = 0, o + 1
        for k in range(o + 1, c + 1):
            ch = mods[k] if k < len(mods) else "]"
            if ch in _OPEN_BR:
                depth += 1
            elif ch in _CLOSE_BR:
                depth -= 1
            if (ch == "," and depth == 0) or k == c:
                piece = mods[s:k]
                lead = len(piece) - len(piece.lstrip())
                if piece.strip():
                    out.append((piece.strip(), offset + s + lead, offset + s + lead + len(piece.strip())))
                s = k + 1
        i = c + 1


def file_premises(f: LeanFile, module: str, known: dict[str, str] | None = None) -> FileScan:
    """The premise rows of a scanned file in file order. `module`: its Lean module name (private
    names are mangled with it). `known`: to_additive translations of the files before it in
    import order (updated with this file's)."""
    b = _Builder(f, module, known if known is not None else {})
    for d in f.declarations:
        b.declaration(d)
    b.aliases()
    b.attribute_commands()
    b.scan.rows.sort(key=lambda r: (tuple(r["start"]), "derived_from" in r, tuple(r["def_pos"])))
    b.scan.translations = b.known
    return b.scan
