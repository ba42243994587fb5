"""Find the `sorry`s in the proofs of a Lean project's theorems, lemmas and examples.

A source scan, not Lean: declarations are found by their keywords, comments and strings are
masked first (see `lean_text`), and a `sorry` counts when it is a whole identifier inside a
declaration's proof (after its `:=`, or its first `| pattern =>` alternative). Each finding
has the exact byte span of the token, so a patch can replace that token and nothing else.

Conventions the scan relies on, as Lean style has them: declaration keywords are reserved
words; other commands (`open`, `set_option`, attributes and modifiers, ...) start at column
0, where they end the declaration before them.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from pathlib import Path

from prover.data.errors import DataError, SkipLog
from prover.data.lean_text import is_ident_char, mask_non_code

THEOREM_KINDS = ("theorem", "lemma", "example")
# Reserved words that always start a command, wherever they are.
_DECL_WORDS = frozenset(THEOREM_KINDS + (
    "def", "abbrev", "instance", "structure", "class", "inductive", "opaque", "axiom",
    "namespace", "section", "end", "mutual"))
# Words that start a command only at column 0 (`open ... in` and `set_option ... in` also
# occur inside proofs; modifiers and attributes come before a declaration keyword).
_COLUMN0_WORDS = frozenset((
    "open", "set_option", "variable", "universe", "attribute", "notation", "macro", "syntax",
    "elab", "macro_rules", "elab_rules", "initialize", "import", "export", "infix", "infixl",
    "infixr", "prefix", "postfix", "local", "scoped", "private", "protected", "noncomputable",
    "nonrec", "partial", "unsafe", "deriving"))
_SKIP_DIRS = frozenset((".lake", "lake-packages", "build", "_target"))

_WORD = re.compile(r"(?<![\w'!?.«])(?:#[A-Za-z_]\w*|[^\W\d][\w'!?.]*)")
_NAME = re.compile(r"\s*(«[^»]*»(?:\.[^\s(){}\[\]⦃⦄:,]+)*|[^\s(){}\[\]⦃⦄:,«]+)")
_ARG = re.compile(r"[ \t]+(\S+)")
_COL0 = re.compile(r"^(?:@\[|#[A-Za-z_]|([^\W\d][\w'!?]*))", re.MULTILINE)
# Tactics followed by a tactic sequence: `all_goals sorry` is a tactic, not a term.
_TACTIC_SEQ_WORDS = frozenset(("all_goals", "any_goals", "try", "repeat", "focus", "classical",
                               "decreasing_by"))
_FUN = re.compile(r"(?<![\w'!?.])(?:fun|λ)(?![\w'!?])")
_OPEN = "([{⦃⟨"
_CLOSE = ")]}⦄⟩"

# Where a sorry sits, which decides how a proof replaces it (see patch.py).
TACTIC_BLOCK = "tactic_block"    # a tactic of a tactic sequence: `by sorry`, `· sorry`, a line
TACTIC_INLINE = "tactic_inline"  # a tactic after `;`, `<;>` or `first |`
TERM = "term"                    # the whole value of a `:=`
TERM_NESTED = "term_nested"      # a term inside a term: `exact sorry`, `⟨sorry, h⟩`


@dataclass(frozen=True)
class FoundSorry:
    file: str  # relative to the project root, with `/`
    kind: str  # theorem, lemma or example
    name: str | None  # with enclosing namespaces; None for an example
    statement: str  # the declaration up to its `:=`, as written
    start: int  # byte span of the `sorry` token in the file
    end: int
    line: int  # 1-based
    column: int  # 0-based, in characters (Lean's convention)
    context: str  # TACTIC_BLOCK, TACTIC_INLINE, TERM or TERM_NESTED
    whole_proof: bool  # the proof is just this sorry (`:= sorry`, `:= by sorry`)
    newline: str = "\n"  # the file's line ending, for multi-line replacements

    @property
    def label(self) -> str:
        return self.name or f"example at {self.file}:{self.line}"


@dataclass
class _Decl:
    kind: str
    start: int  # index of the keyword
    end: int  # index where the next command starts
    name: str | None


def lean_files(root: Path) -> list[Path]:
    """The `.lean` files under `root`, sorted, without build output and dependencies."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        out += [Path(folder) / f for f in files if f.endswith(".lean")]
    return sorted(out)


def find_sorries(path: str | Path, skips: SkipLog | None = None) -> list[FoundSorry]:
    """Every proof `sorry` in the project at `path` (or in one `.lean` file), in file order.
    A file that is not UTF-8 raises a DataError, or with `skips` is counted and left out."""
    path = Path(path)
    root, files = (path.parent, [path]) if path.is_file() else (path, lean_files(path))
    found: list[FoundSorry] = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        try:
            text = f.read_bytes().decode("utf-8")
        except UnicodeDecodeError as e:
            err = DataError(str(f), f"not valid UTF-8 at byte {e.start}")
            if skips is None:
                raise err from None
            skips.add("file not UTF-8", str(err))
            continue
        found += find_in_text(text, rel)
    return found


def find_in_text(text: str, file: str) -> list[FoundSorry]:
    code = mask_non_code(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    out = []
    for decl, sorry_at in _sorries_by_decl(code):
        proof_start = _proof_start(code, decl)
        if sorry_at < proof_start:
            continue  # in the statement (a default argument, say), not the proof
        context = _context(code, proof_start, sorry_at)
        rest = " ".join(code[proof_start:decl.end].split())
        out.append(FoundSorry(
            file=file, kind=decl.kind, name=decl.name,
            statement=text[decl.start:proof_start].strip(),
            start=len(text[:sorry_at].encode("utf-8")),
            end=len(text[:sorry_at + 5].encode("utf-8")),
            line=text.count("\n", 0, sorry_at) + 1,
            column=sorry_at - (text.rfind("\n", 0, sorry_at) + 1),
            context=context,
            whole_proof=rest in (":= sorry", ":= by sorry"),
            newline=newline,
        ))
    return out


def _sorries_by_decl(code: str) -> list[tuple[_Decl, int]]:
    """(declaration, index of the sorry) for each sorry inside a theorem-like declaration."""
    boundaries = {m.start() for m in _COL0.finditer(code)
                  if m.group(1) is None or m.group(1) in _COLUMN0_WORDS}
    events = []  # (index, word)
    for m in _WORD.finditer(code):
        word = m.group()
        if word in _DECL_WORDS or word == "sorry":
            events.append((m.start(), word))
            if word != "sorry":
                boundaries.add(m.start())
    ordered = sorted(boundaries)

    def next_boundary(i: int) -> int:
        k = bisect.bisect_right(ordered, i)
        return ordered[k] if k < len(ordered) else len(code)

    scopes: list[tuple[str, str]] = []  # (kind, name): namespaces, sections, mutual blocks
    decl: _Decl | None = None
    out = []
    for i, word in events:
        if word == "sorry":
            if decl is not None and decl.start < i < decl.end:
                out.append((decl, i))
            continue
        decl = None
        arg = _word_after(code, i + len(word))
        if word == "namespace":
            scopes.append(("namespace", arg or ""))
        elif word in ("section", "mutual"):
            scopes.append((word, arg if word == "section" else ""))
        elif word == "end":
            _close_scope(scopes, arg)
        elif word in THEOREM_KINDS:
            name = None if word == "example" else _full_name(scopes, _decl_name(code, i + len(word)))
            decl = _Decl(word, i, next_boundary(i), name)
    return out


def _word_after(code: str, i: int) -> str | None:
    """The name after `namespace`/`section`/`end`, if on the same line."""
    m = _ARG.match(code, i)
    if m is None or m.group(1) in _DECL_WORDS:
        return None
    return m.group(1)


def _close_scope(scopes: list[tuple[str, str]], name: str | None) -> None:
    if not scopes:
        return
    if name:
        for k in range(len(scopes) - 1, -1, -1):
            if scopes[k][1] == name:
                del scopes[k:]
                return
    scopes.pop()


def _decl_name(code: str, i: int) -> str:
    m = _NAME.match(code, i)
    if not m:
        return ""
    name = m.group(1)
    # `theorem foo.{u, v}`: the universe parameters follow `.{`; the name (what LeanDojo looks
    # theorems up by) is `foo`, without the dot.
    if name.endswith(".") and code.startswith("{", m.end()):
        name = name[:-1]
    return name


def _full_name(scopes: list[tuple[str, str]], name: str) -> str:
    if name.startswith("_root_."):
        return name[len("_root_."):]
    parts = [n for kind, n in scopes if kind == "namespace" and n]
    return ".".join(parts + [name])


def _proof_start(code: str, decl: _Decl) -> int:
    """Index of the `:=` that starts the proof (outside brackets), or of the first `|`
    alternative starting a line; `decl.end` when there is neither."""
    depth = 0
    i = decl.start
    while i < decl.end:
        c = code[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and code.startswith(":=", i):
            return i
        elif depth == 0 and c == "|" and not code[code.rfind("\n", 0, i) + 1:i].strip():
            return i
        i += 1
    return decl.end


def _prev_token(code: str, i: int) -> tuple[str, int]:
    """The code token before index `i` and its start ('' at the start of the text)."""
    k = i - 1
    while k >= 0 and code[k].isspace():
        k -= 1
    if k < 0:
        return "", 0
    for sym in (":=", "=>", "<;>", ";", "·", "|", ",", "(", "⟨", "["):
        if code.startswith(sym, k + 1 - len(sym)):
            return sym, k + 1 - len(sym)
    j = k
    while j >= 0 and (is_ident_char(code[j]) or code[j] == "."):
        j -= 1
    if j == k:
        return code[k], k
    return code[j + 1:k + 1], j + 1


def _starts_line(code: str, i: int) -> bool:
    return not code[code.rfind("\n", 0, i) + 1:i].strip()


def _arrow_of_fun(code: str, at: int) -> bool:
    """Whether the `=>` at `at` ends a `fun x =>` (a term), not a `| pat =>` or `case _ =>`."""
    segment = code[code.rfind("\n", 0, at) + 1:at].rsplit("|", 1)[-1]
    return _FUN.search(segment) is not None


def _context(code: str, proof_start: int, i: int) -> str:
    prev, at = _prev_token(code, i)
    if prev == ":=":
        return TERM
    if (prev in ("by", "·") or prev in _TACTIC_SEQ_WORDS
            or (prev == "." and _starts_line(code, at))):
        return TACTIC_BLOCK
    if prev in (";", "<;>"):
        return TACTIC_INLINE
    if prev == "=>" and _arrow_of_fun(code, at):
        return TERM_NESTED
    if prev in ("=>", "then", "else", "|") or _starts_line(code, i):
        if not _in_tactic_block(code, proof_start, i):
            return TERM_NESTED
        return TACTIC_INLINE if prev == "|" else TACTIC_BLOCK
    return TERM_NESTED


def _column(code: str, i: int) -> int:
    return i - (code.rfind("\n", 0, i) + 1)


def _in_tactic_block(code: str, proof_start: int, i: int) -> bool:
    """Whether index `i` lies in the tactic block of some `by` of this proof: Lean's rule is
    that a block's lines start at or right of its first tactic, so the block of a `by` whose
    first tactic is at column c reaches every following line that starts at column >= c."""
    for m in reversed(list(_WORD.finditer(code, proof_start, i))):
        if m.group() != "by":
            continue
        first = m.end()
        while first < i and code[first].isspace():
            first += 1
        col = _column(code, first)
        line_start = code.find("\n", first)
        inside = True
        while 0 <= line_start < i:
            j = line_start + 1
            while j < len(code) and code[j] in " \t\r":
                j += 1
            if j < len(code) and code[j] != "\n" and j <= i and _column(code, j) < col:
                inside = False
                break
            line_start = code.find("\n", j)
        if inside:
            return True
    return False
