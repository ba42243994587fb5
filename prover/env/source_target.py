"""A LeanDojo record's theorem as the REPL opens it: header commands and statement, from its source file.

LeanDojo's `start` is the theorem's keyword, after its modifiers. The text before it cannot be
the header as it is: it may end in a doc comment, `@[simp]`, `private`, `protected`,
`nonrec`, or `set_option ... in` / `open ... in`, all of which need the declaration after them
(Lean rejects them as a parse error). So:

- the declaration's *command* starts at its first modifier (`command_start`): attributes,
  modifier words and `... in` commands before the keyword, on its line or the lines above,
  comments (the doc comment) between them;
- the header ends at the last code character before that command (a command boundary);
- the statement is the `... in` prefixes (which Lean needs to read the signature) and the
  declaration from its keyword to where its signature ends: the first top-level `:=`, or the
  first `|` at the start of a line (a theorem proved by equations has no top-level `:=`);
  doc comments, attributes and modifier words are left out (the statement is re-stated under
  a fresh name by `prover.env.verify`, where they would act on that name).

Bounded work per file: the header is not one chunk of text per theorem but the file's
commands cut at every top-level declaration's command start (`FilePlan.cuts`), imports first.
Every theorem of a file shares the prefix of chunks before it, and `ReplSession.header_env`
elaborates each chunk once per REPL (reused by environment id), so a worker given the
theorems of one file elaborates the file's commands once, in order, and the imports once per
distinct import set.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from prover.data.lean_decls import THEOREM_KINDS, Declaration, scan_declarations
from prover.data.lean_text import mask_non_code
from prover.env.base import EnvInitError
from prover.env.text_check import command_words

# Words that may stand between a declaration's attributes and its keyword.
MODIFIERS = frozenset(("private", "protected", "nonrec", "noncomputable", "unsafe", "partial", "scoped", "local"))
# Commands that scope the one after them with `in`. Lean's grammar lets any command do so
# (`command " in " command`), so any word that starts a command counts too (`unseal f in`,
# `seal`, ...: `prover.env.text_check.command_words`, read from Lean's source).
IN_COMMANDS = frozenset(("open", "set_option", "variable", "include", "omit", "attribute", "local", "scoped",
                         "unseal", "seal"))
_IMPORT_LINE = re.compile(r"^import\s+\S.*$", re.MULTILINE)
_MUTUAL = re.compile(r"^mutual\b[\s\S]*?^end\b", re.MULTILINE)
_OPEN, _CLOSE = "([{⦃⟨", ")]}⦄⟩"


@dataclass(frozen=True)
class DeclCommand:
    """Where one declaration's command starts and what of it the statement keeps."""

    start: int  # its first modifier, attribute or `... in` command (the keyword if none)
    cut: int  # the header ends here: just past the last code character before `start`
    in_prefixes: tuple[tuple[int, int], ...]  # spans of its `... in` commands, in order


def _skip_space_back(code: str, i: int) -> int:
    """Just past the last non-space character before `i` (0 if none)."""
    width = 256  # a masked doc comment is a long run of spaces: strip it a window at a time
    while i > 0:
        window = code[max(0, i - width):i]
        kept = window.rstrip()
        if kept:
            return i - (len(window) - len(kept))
        i -= len(window)
    return 0


def _matching_open(code: str, close: int) -> int | None:
    """Index of the bracket that opens the one at `close`."""
    depth = 0
    for k in range(close, -1, -1):
        if code[k] in _CLOSE:
            depth += 1
        elif code[k] in _OPEN:
            depth -= 1
            if depth == 0:
                return k
    return None


def _command_line_start(code: str, i: int) -> int:
    """Start of the command holding index `i`: up the lines while they are indented or blank
    (commands start at column 0, the convention `prover.data.lean_decls` reads files by)."""
    k = code.rfind("\n", 0, i) + 1
    while k > 0 and (code[k] in " \t" or code[k] == "\n"):
        k = code.rfind("\n", 0, k - 1) + 1
    return k


def _word_before(code: str, j: int) -> tuple[str, int]:
    """The identifier-like word ending at `j`, and its start."""
    k = j
    while k > 0 and (code[k - 1].isalnum() or code[k - 1] in "_'!?."):
        k -= 1
    return code[k:j], k


def command_start(code: str, keyword: int) -> DeclCommand:
    """The declaration command whose keyword is at `keyword` (`code`: masked, comments blank)."""
    i = keyword
    prefixes: list[tuple[int, int]] = []
    while True:
        j = _skip_space_back(code, i)
        if j == 0:
            break
        if code[j - 1] == "]":
            k = _matching_open(code, j - 1)
            if k is not None and k > 0 and code[k - 1] == "@":
                i = k - 1
                continue
            break
        word, w = _word_before(code, j)
        if word in MODIFIERS:
            i = w
            continue
        if word == "in":
            k = _command_line_start(code, w)
            first = code[k:].split(None, 1)[0] if code[k:].strip() else ""
            if first in IN_COMMANDS or first in command_words():
                prefixes.append((k, j))
                i = k
                continue
        break
    return DeclCommand(i, _skip_space_back(code, i), tuple(reversed(prefixes)))


@dataclass(frozen=True)
class FilePlan:
    """A source file cut into the commands the REPL elaborates, once per worker."""

    text: str
    code: str
    declarations: tuple[Declaration, ...]
    imports_end: int
    cuts: tuple[int, ...]  # chunk boundaries after the imports, ascending
    line_starts: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> FilePlan:
        code = mask_non_code(text)
        decls = tuple(d for d in scan_declarations(code) if d.kind not in ("ctor", "field"))
        first = decls[0].start if decls else len(code)
        imports_end = max((m.end() for m in _IMPORT_LINE.finditer(code[:first])), default=0)
        mutual = [(m.start(), m.end()) for m in _MUTUAL.finditer(code)]
        cuts = set()
        for d in decls:
            if any(a < d.start < b for a, b in mutual):
                continue  # a `mutual` block is one command: never cut inside it
            c = command_start(code, d.start).cut
            if c > imports_end:
                cuts.add(c)
        starts = (0, *(m.end() for m in re.finditer("\n", text)))
        return cls(text, code, decls, imports_end, tuple(sorted(cuts)), starts)

    def header(self, cut: int) -> tuple[str, ...]:
        """The commands before `cut` (one of `cuts`, or the imports' end): the import lines,
        then the chunks between cuts; chunks with no code (comments only) are left out."""
        imports = self.imports
        chunks = [imports] if imports else []
        prev = self.imports_end
        for c in self.cuts:
            if c > cut:
                break
            if self.code[prev:c].strip():
                chunks.append(self.text[prev:c])
            prev = c
        return tuple(chunks)

    @property
    def imports(self) -> str:
        """The file's import lines, and nothing else (not the copyright comment above them):
        files with the same imports send the same first command, elaborated once per REPL."""
        return "\n".join(m.group().strip() for m in _IMPORT_LINE.finditer(self.code[:self.imports_end]))

    def declaration_at(self, keyword: int) -> Declaration | None:
        return next((d for d in self.declarations if d.start == keyword), None)

    def keyword_of(self, at: int) -> int:
        """The keyword of the declaration whose command starts or whose keyword is at `at`:
        LeanDojo's `start` is the keyword, except for a `lemma` (a Mathlib macro), whose
        start is its command's, doc comment and attributes first."""
        p = at
        while p < len(self.code) and self.code[p].isspace():  # a doc comment is blank in `code`
            p += 1
        if self.declaration_at(p) is not None:
            return p
        for d in self.declarations:
            if d.start > p:
                return d.start if command_start(self.code, d.start).start <= p else at
        return at


@lru_cache(maxsize=8)
def _plan(path: str, mtime_ns: int, size: int) -> FilePlan:
    return FilePlan.of(Path(path).read_text(encoding="utf-8"))


def file_plan(path: Path) -> FilePlan:
    """The plan of a file, cached while it is unchanged (a worker opens its theorems in turn)."""
    st = path.stat()
    return _plan(str(path), st.st_mtime_ns, st.st_size)


def signature_end(plan: FilePlan, keyword: int) -> int | None:
    """Just past the last code character of a declaration's signature, or None when it has no
    proof (no top-level `:=`, no `|` alternative)."""
    d = plan.declaration_at(keyword)
    if d is None:
        return None
    if d.proof_start >= d.end:
        return None
    end = d.proof_start
    while end > keyword and plan.code[end - 1].isspace():
        end -= 1
    return end


def statement_of(plan: FilePlan, keyword: int) -> str | None:
    """The statement the REPL opens: `... in` prefixes, then keyword to signature end."""
    end = signature_end(plan, keyword)
    if end is None:
        return None
    cmd = command_start(plan.code, keyword)
    prefixes = [plan.text[a:b] for a, b in cmd.in_prefixes]
    return "\n".join(prefixes + [plan.text[keyword:end]])


def keyword_index(plan: FilePlan, line: int, column: int) -> int | None:
    """The index of a LeanDojo position (both 1-based)."""
    starts = plan.line_starts
    if not 1 <= line <= len(starts):
        return None
    return starts[line - 1] + column - 1


def target_parts(path: Path, line: int, column: int, name: str) -> tuple[tuple[str, ...], str]:
    """(header commands, statement) of the theorem whose keyword is at LeanDojo's (line, column)."""
    try:
        plan = file_plan(path)
    except OSError as e:
        raise EnvInitError(f"repl: cannot read {path}: {e}") from e
    at = keyword_index(plan, line, column)
    if at is None:
        raise EnvInitError(f"repl: {name} starts at line {line}, past the end of {path}")
    kw = plan.keyword_of(at)
    d = plan.declaration_at(kw)
    if d is None or d.kind not in THEOREM_KINDS + ("example", "def", "abbrev", "instance"):
        raise EnvInitError(f"repl: no declaration keyword at {line}:{column} of {path} for {name}")
    statement = statement_of(plan, kw)
    if statement is None:
        raise EnvInitError(f"repl: no `:=` or `|` after the statement of {name} in {path}")
    return plan.header(command_start(plan.code, kw).cut), statement
