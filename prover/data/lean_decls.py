"""The declarations of a Lean 4 file, read from its source text (no Lean): kinds, full names, spans.

What `prover data trace --backend repl` needs to place the REPL's tactics in theorems and to
build a premise corpus of a project's own files. A scan, not an elaborator; the conventions it
relies on are those of `prover.sorries.find` (comments and strings masked by `lean_text`;
declaration keywords are reserved words; other commands start at column 0):

- a declaration starts at its keyword (`theorem`, `def`, ...; modifiers and attributes before
  it are not part of the span, as LeanDojo's theorem positions) and ends at its last code
  character before the next command;
- its full name is the enclosing `namespace`s joined with the name as written (`_root_.`
  drops them); `private` names are kept as written (Lean mangles them);
- anonymous instances and `example`s have no name; `deriving instance` is not a declaration;
- inductive constructors (`| c ...`) and structure/class fields (`f : T` lines after
  `where`, plus the constructor `mk` or the one named `c ::`) are declarations of their own,
  as in LeanDojo corpora;
- `open X` (and `open X in` for the next declaration) is recorded per declaration, for
  resolving names written in proofs.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from pathlib import Path

from prover.data.lean_text import mask_non_code

THEOREM_KINDS = ("theorem", "lemma")
DECL_KINDS = ("theorem", "lemma", "example", "def", "abbrev", "instance", "structure", "class",
              "inductive", "opaque", "axiom")
_SCOPE_WORDS = ("namespace", "section", "end", "mutual")
_EVENT_WORDS = frozenset(DECL_KINDS + _SCOPE_WORDS)
# Mathlib's declaration commands (not reserved words): declarations only at column 0.
_COLUMN0_DECLS = frozenset(("irreducible_def",))
# Words that start a command only at column 0 (as prover.sorries.find).
_COLUMN0_WORDS = frozenset((
    "open", "set_option", "variable", "universe", "attribute", "notation", "macro", "syntax",
    "elab", "macro_rules", "elab_rules", "initialize", "import", "export", "infix", "infixl",
    "infixr", "prefix", "postfix", "local", "scoped", "private", "protected", "noncomputable",
    "nonrec", "partial", "unsafe", "deriving", "alias", "add_decl_doc")) | _COLUMN0_DECLS
_SKIP_DIRS = frozenset((".lake", "lake-packages", "build", "_target"))

_WORD = re.compile(r"(?<![\w'!?.«])(?:#[A-Za-z_]\w*|[^\W\d][\w'!?.]*)")
_COL0 = re.compile(r"^(?:@\[|#[A-Za-z_]|([^\W\d][\w'!?]*))", re.MULTILINE)
_NAME = re.compile(r"\s*(«[^»]*»(?:\.[^\s(){}\[\]⦃⦄:,]+)*|[^\s(){}\[\]⦃⦄:,«]+)")
_ARG = re.compile(r"[ \t]+(\S+)")
_NEWLINE = re.compile("\n")
_IMPORT = re.compile(r"^import[ \t]+([^\n]*)", re.MULTILINE)
_OPEN_LINE = re.compile(r"^open[ \t]+([^\n]*)", re.MULTILINE)
_IDENT = re.compile(r"[^\W\d][\w'!?]*(?:\.[^\W\d][\w'!?]*)*")
_CTOR = re.compile(r"\|\s*(?:(?:protected|private)\s+)?([^\W\d][\w'!?]*)")
# A field line: `f : T`, `f g : T`, `f (x : A) : T` (binders), `[inst : C]`, `{X Y : C}` (binder
# fields). `f := v` without a type gives an inherited field a default: not a field of its own.
_FIELD = re.compile(r"^([ \t]+)[\[{(⦃]?((?:[^\W\d][\w'!?]*[ \t]+)*[^\W\d][\w'!?]*)[ \t]*(?::(?!=)|(?=[({⦃]))",
                    re.MULTILINE)
_CTOR_RENAME = re.compile(r"\s*([^\W\d][\w'!?]*)\s*::")
# `noncomputable irreducible_def f`: a column-0 declaration command after its modifiers.
_MODIFIED_COL0 = re.compile(r"^(?:(?:noncomputable|private|protected)[ \t]+)+(irreducible_def)\b", re.MULTILINE)
_PRIORITY = re.compile(r"\s*\(\s*priority\s*:=[^()]*\)")
_OPEN_BR, _CLOSE_BR = "([{⦃⟨", ")]}⦄⟩"


@dataclass(frozen=True)
class Declaration:
    kind: str  # the keyword (`theorem`, `def`, ...), or `ctor` / `field`
    name: str | None  # full name; None for an example or an anonymous instance
    start: int  # character index of the keyword (of the name, for ctors and fields)
    end: int  # character index just past its last code character
    name_start: int  # character span of the name as written
    name_end: int
    proof_start: int  # index of the `:=` (or first `|` alternative) starting the proof; `end` if none
    namespaces: tuple[str, ...] = ()  # enclosing namespaces, outermost first
    opens: tuple[str, ...] = ()  # namespaces opened where it is declared


@dataclass
class LeanFile:
    """One scanned file: its text (masked code beside it), declarations and imports."""

    path: str  # relative to the project root, with `/`
    text: str
    code: str  # `text` with comments and strings blanked (same indices)
    declarations: list[Declaration]
    imports: list[str]  # module names
    _line_starts: list[int]

    @classmethod
    def scan(cls, text: str, path: str) -> LeanFile:
        code = mask_non_code(text)
        starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        imports = [m for line in _IMPORT.findall(code) for m in line.split()]
        return cls(path, text, code, scan_declarations(code), imports, starts)

    def position(self, index: int) -> tuple[int, int]:
        """(line, column) of a character index: line 1-based, column 0-based (Lean's)."""
        line = bisect.bisect_right(self._line_starts, index) - 1
        return line + 1, index - self._line_starts[line]

    def index(self, line: int, column: int) -> int | None:
        """The character index of a Lean position (line 1-based, column 0-based in
        codepoints), or None when it lies outside the text."""
        if not 1 <= line <= len(self._line_starts) or column < 0:
            return None
        start = self._line_starts[line - 1]
        stop = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.text)
        return start + column if start + column <= stop else None

    def leandojo_pos(self, index: int) -> list[int]:
        """LeanDojo's [line, column] of a character index: both 1-based (an end position is
        the index just past the last character, so its column is one past the last's)."""
        line, column = self.position(index)
        return [line, column + 1]

    def column(self, index: int) -> int:
        return self.position(index)[1]

    def theorems(self) -> list[Declaration]:
        return [d for d in self.declarations if d.kind in THEOREM_KINDS and d.name]

    def declaration_at(self, index: int) -> Declaration | None:
        """The top-level declaration (not a ctor or field) whose span holds `index`."""
        for d in self.declarations:
            if d.kind not in ("ctor", "field") and d.start <= index < d.end:
                return d
        return None


def lean_files(root: Path) -> list[Path]:
    """The `.lean` files of a project, sorted: no build output, dependencies, hidden folders,
    nor the Lake configuration (`lakefile.lean`)."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        out += [Path(folder) / f for f in files
                if f.endswith(".lean") and not (Path(folder) == root and f == "lakefile.lean")]
    return sorted(out)


# -- the scan ---------------------------------------------------------------------------------

def _word_after(code: str, i: int) -> str | None:
    m = _ARG.match(code, i)
    if m is None or m.group(1) in _EVENT_WORDS:
        return None
    return m.group(1)


def _name_at(code: str, i: int) -> tuple[str, int, int]:
    """The declaration name after index `i` (just past the keyword) and its span."""
    m = _NAME.match(code, i)
    if not m:
        return "", i, i
    name = m.group(1)
    if name.endswith(".") and code.startswith("{", m.end()):  # `theorem foo.{u}`
        name = name[:-1]
    return name, m.start(1), m.start(1) + len(name)


def _full_name(namespaces: list[str], name: str) -> str:
    if name.startswith("_root_."):
        return name[len("_root_."):]
    return ".".join([*namespaces, name])


def _depth0(code: str, start: int, end: int):
    """Indices in [start, end) at bracket depth 0 (relative to `start`)."""
    depth = 0
    for i in range(start, end):
        c = code[i]
        if c in _OPEN_BR:
            depth += 1
        elif c in _CLOSE_BR:
            depth = max(0, depth - 1)
        elif depth == 0:
            yield i


def _proof_start(code: str, start: int, end: int) -> int:
    for i in _depth0(code, start, end):
        if code.startswith(":=", i):
            return i
        if code[i] == "|" and not code[code.rfind("\n", 0, i) + 1:i].strip():
            return i
    return end


def _trim_end(code: str, start: int, end: int) -> int:
    while end > start and code[end - 1].isspace():
        end -= 1
    return end


def _opens(text: str) -> list[str]:
    return [w for w in text.split() if w not in ("in", "hiding", "renaming", "scoped") and _IDENT.fullmatch(w)]


def scan_declarations(code: str) -> list[Declaration]:
    """Every declaration of a masked file, in file order (ctors and fields after their type)."""
    boundaries = set()
    col0_decls = []
    for m in _COL0.finditer(code):
        word = m.group(1)
        if word is None or word in _COLUMN0_WORDS:
            boundaries.add(m.start())
        if word in _COLUMN0_DECLS:
            col0_decls.append((m.start(), word))
    col0_decls += [(m.start(1), m.group(1)) for m in _MODIFIED_COL0.finditer(code)]
    events = col0_decls
    for m in _WORD.finditer(code):
        if m.group() in _EVENT_WORDS:
            events.append((m.start(), m.group()))
            boundaries.add(m.start())
    events.sort()
    ordered = sorted(boundaries)
    opens_in = {m.start(): _opens(m.group(1)) for m in _OPEN_LINE.finditer(code)}

    def next_boundary(i: int) -> int:
        k = bisect.bisect_right(ordered, i)
        return ordered[k] if k < len(ordered) else len(code)

    scopes: list[tuple[str, str, list[str]]] = [("file", "", [])]  # (kind, name, opens)
    pending_in: list[str] = []  # `open X in`: for the next declaration only
    decls: list[Declaration] = []
    skip_until = -1
    open_starts = sorted(opens_in)
    last_open = 0
    for i, word in events:
        if i < skip_until:
            continue
        # `open` lines between the last event and this one.
        while last_open < len(open_starts) and open_starts[last_open] < i:
            at = open_starts[last_open]
            names = opens_in[at]
            line = code[at:code.find("\n", at) if "\n" in code[at:] else len(code)]
            if line.rstrip().endswith(" in"):
                pending_in = names
            else:
                scopes[-1][2].extend(names)
            last_open += 1
        after = i + len(word)
        if word == "namespace":
            scopes.append(("namespace", _word_after(code, after) or "", []))
            continue
        if word in ("section", "mutual"):
            scopes.append((word, (_word_after(code, after) or "") if word == "section" else "", []))
            continue
        if word == "end":
            _end_scope(scopes, _word_after(code, after))
            continue
        line_before = code[code.rfind("\n", 0, i) + 1:i].split()
        if word == "instance" and line_before and line_before[-1] == "deriving":
            continue
        if word == "instance" and _in_brackets(code, i):  # `attribute [local instance 10] x`
            continue
        kind = word
        if word == "class":
            m = re.compile(r"\s+(inductive|abbrev)\b").match(code, after)
            if m:
                kind, after = f"class {m.group(1)}", m.end()
                skip_until = m.end()
        end_b = next_boundary(after - 1)
        end = _trim_end(code, i, end_b)
        namespaces = [s[1] for s in scopes if s[0] == "namespace" and s[1]]
        opens = tuple(o for s in scopes for o in s[2]) + tuple(pending_in)
        pending_in = []
        if kind == "instance" and (m := _PRIORITY.match(code, after)):  # `instance (priority := 100) foo`
            after = m.end()
        name, n0, n1 = ("", after, after) if kind == "example" else _name_at(code, after)
        if kind == "instance" and (not name or name.startswith(("(", "["))):
            name = ""
        full = _full_name(namespaces, name) if name else None
        parts = ".".join(namespaces).split(".") if namespaces else []  # `namespace A.B` opens A and A.B
        ns = tuple(".".join(parts[:k]) for k in range(1, len(parts) + 1))
        decl = Declaration(kind, full, i, end, n0, n1, _proof_start(code, n1, end), ns, opens)
        decls.append(decl)
        if full and kind in ("inductive", "class inductive"):
            decls += _constructors(code, decl)
        elif full and kind in ("structure", "class"):
            decls += _fields(code, decl)
    return decls


def _in_brackets(code: str, i: int) -> bool:
    line = code[code.rfind("\n", 0, i) + 1:i]
    return line.count("[") > line.count("]")


def _end_scope(scopes: list[tuple[str, str, list[str]]], name: str | None) -> None:
    if len(scopes) <= 1:
        return
    if name:
        for k in range(len(scopes) - 1, 0, -1):
            if scopes[k][1] == name:
                del scopes[k:]
                return
    scopes.pop()


def _constructors(code: str, decl: Declaration) -> list[Declaration]:
    out = []
    bars = [i for i in _depth0(code, decl.name_end, decl.end) if code[i] == "|"]
    for k, b in enumerate(bars):
        m = _CTOR.match(code, b)
        if not m:
            continue
        stop = _trim_end(code, b, bars[k + 1] if k + 1 < len(bars) else decl.end)
        out.append(Declaration("ctor", f"{decl.name}.{m.group(1)}", m.start(1), stop, m.start(1),
                               m.end(1), stop, decl.namespaces, decl.opens))
    return out


def _fields(code: str, decl: Declaration) -> list[Declaration]:
    # `where`, or `:=` in structures written before Lean 4 settled on `where` (`structure Hom :=`).
    where = next((i for i in _depth0(code, decl.name_end, decl.end)
                  if (code.startswith("where", i) and not code[i - 1].isalnum()
                      and (i + 5 >= len(code) or not code[i + 5].isalnum()))
                  or code.startswith(":=", i)), None)
    ctor = Declaration("ctor", f"{decl.name}.mk", decl.start, decl.end, decl.name_start,
                       decl.name_end, decl.end, decl.namespaces, decl.opens)
    if where is None:
        return [ctor]
    body = where + (2 if code.startswith(":=", where) else len("where"))
    rename = _CTOR_RENAME.match(code, body)
    if rename:
        ctor = Declaration("ctor", f"{decl.name}.{rename.group(1)}", decl.start, decl.end,
                           rename.start(1), rename.end(1), decl.end, decl.namespaces, decl.opens)
        body = rename.end()
    lines = [m for m in _FIELD.finditer(code, body, decl.end)]
    if not lines:
        return [ctor]
    column = min(len(m.group(1).expandtabs()) for m in lines)
    lines = [m for m in lines if len(m.group(1).expandtabs()) == column]
    out = [ctor]
    for k, m in enumerate(lines):
        stop = _trim_end(code, m.start(2), lines[k + 1].start() if k + 1 < len(lines) else decl.end)
        for w in re.finditer(r"[^\W\d][\w'!?]*", m.group(2)):
            if w.group() in ("protected", "private"):  # `protected foo : T`: a modifier, not a field
                continue
            s = m.start(2) + w.start()
            out.append(Declaration("field", f"{decl.name}.{w.group()}", s, stop, s, s + len(w.group()),
                                   stop, decl.namespaces, decl.opens))
    return out
