"""`prover data trace PROJECT --backend repl`: LeanDojo Benchmark 4 records from the Lean REPL, without lean-dojo.

Each `.lean` file of a local Lean project that declares a theorem goes through the REPL as a
`FileCommand` with `allTactics: true` (`{"path": ..., "allTactics": true}`); its answer lists
every tactic Lean ran: the tactic's span, the goals before it (pretty-printed) and, in recent
REPLs (the v4.24.0 transcripts have it, the v4.10.0-rc1 ones not), the constants its proof term
uses (`usedConstants`). This module turns those answers plus a source scan of the files
(`prover.data.lean_decls`) into the dataset the rest of the pipeline reads: `corpus.jsonl`, `random/{train,val,test}.json` (the split helpers of
`prover.data.splits`, as `prover data trace` with lean-dojo) and `metadata.json`.

The REPL is injected: `trace_project_repl(project, out, run_file)` takes any callable that runs
one file and returns the raw answer, so it is tested on recorded answers of the real REPL;
`trace_project` opens the real one (`prover.env.repl_session.open_file_runner`).

What is exact: the tactics Lean ran, their spans and text (sliced from the source file at the
REPL's positions), the goals before each, the constants each used, and the positions of the
project's own declarations. What is approximate is written into `metadata.json` under
`approximations` (the `APPROXIMATIONS` below) so that a dataset says how it was made:

- theorems: only `theorem`/`lemma` declarations found by the source scan, with full names from
  their enclosing `namespace`s; a tactic belongs to the declaration whose span holds its start.
  A theorem whose span holds an error message or a `sorry` is left out (counted in `skipped`),
  and so are all theorems of a file the REPL could not run (listed in `files_failed`; the run
  goes on, unless the first files all fail to get any answer: then the REPL is not working
  and the run stops at once).
- nesting: tactics at every nesting level are kept, in the REPL's order (Lean's info tree, as
  LeanDojo's), as LeanDojo records every tactic of every tactic block (inside `·` blocks,
  `have ... := by`, `case ... =>`, `(by ...)` terms). As LeanDojo's benchmark: no tactic run on
  no goals and no tactic whose text holds `·`. The REPL reports both sides of `t <;> s` and not
  the combination; LeanDojo records the combination only: `t <;> s` becomes one tactic (t's
  goals before it, both sides' constants), and the runs of `s` are dropped. A tactic run again
  on the same span (`all_goals t`, `any_goals t`, `repeat t`) is kept once, its first run.
- state_after: the REPL gives only the goals before each tactic. After a tactic comes the state
  before the next tactic of the same tactic block (blocks are told apart by position, `;` and
  Lean's column layout); where `·` blocks follow, the goal each of them focuses, then the state
  before the next tactic of the block, joined as Lean prints several goals; after the last
  tactic of a block, `no goals` (right for a proof, a `·`, `case` or `have ... := by` block,
  which must close their goals; not for `try`, `first`, `all_goals`, `repeat` bodies).
- premises: the `usedConstants` of a tactic that resolve to a premise of the corpus (the
  project's own declarations, then `--corpus`), annotated `<a>...</a>` where the tactic text
  names them (the whole name, a suffix after a namespace as `open` allows, after `_root_.` or
  `@`, before a projection `.1`/`.mp`, or a `.name` field after a term); one entry per
  occurrence, as LeanDojo. Resolved constants the text does not name (what `rw` and `simp`
  add: `Eq.mpr`, instances, or the project's definitions a statement unfolds to) are not
  annotated (counted in metadata `premise_links.used_in_corpus_not_named`); constants no
  corpus has (Lean core, or a library without `--corpus`) are neither. LeanDojo annotates
  every name the text resolves to, used or not; here a `simp` lemma that simp did not use is
  not annotated. Given the constants a tactic used, this rule gives LeanDojo's own annotation
  on 769 of the 770 tactics of its real records in the shared data (tests/test_trace_repl.py;
  that shows where tags go, not which constants Lean reports: the tests on the REPL's own
  `usedConstants`, from its `file2` and `all_tactics*` transcripts, show that). Without `usedConstants` (older REPLs, e.g. at Lean
  v4.10.0-rc1) a name in the text is looked up in the corpus as written, or under the
  theorem's namespaces and `open`s. A project premise's `def_pos`/`def_end_pos` are its name's
  span (as LeanDojo); a `--corpus` premise's are its declaration's.
- text and positions: the REPL's line is 1-based and its column 0-based (codepoints); records
  are 1-based [line, column] as LeanDojo's, ends one past the last character. Theorem `start`
  is its keyword (modifiers and attributes before it are not included, as LeanDojo's); `end`
  is its last code character. A multi-line tactic's later lines lose the indentation of its
  first (LeanDojo's `tactic`); the annotated text is that same text.
- states are the REPL's `goals` strings, as Lean's pretty printer gave them to the REPL (an old
  REPL flattens a short list of goals onto one line, where LeanDojo keeps a line per hypothesis).
- corpus: the project's premises are its named declarations from the source scan (with
  inductive constructors and structure fields), not Lean's environment: no auto-generated
  names (anonymous instances, equation lemmas, `private` names as Lean mangles them). With
  `--corpus`, the files of that corpus the project imports (transitively) are written first,
  so the dataset is whole; without it, library premises are in no corpus and not annotated.
"""
from __future__ import annotations

import graphlib
import logging
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prover.data.corpus import Corpus, module_name
from prover.data.jsonio import write_json, write_jsonl
from prover.data.lean_decls import THEOREM_KINDS, Declaration, LeanFile, lean_files
from prover.data.lean_text import mask_non_code
from prover.data.splits import make_split, write_split
from prover.data.theorem import DEFAULT_MAX_STATE_CHARS, parse_theorem

log = logging.getLogger(__name__)

RunFile = Callable[[Path], dict]  # runs {"path": str(file), "allTactics": true}; the raw answer

NO_GOALS = "no goals"
ABORT_AFTER = 3  # the first files all raised (no answer at all): the REPL is not working, stop
CODE_CHARS = 2000  # a non-theorem premise's code past this is cut (with ⋯), as the reference corpora

APPROXIMATIONS = {
    "theorems": "theorem/lemma declarations found by a source scan (keywords, namespaces), not by "
                "Lean; a tactic belongs to the declaration whose span holds its start; theorems "
                "with an error message or a sorry in their span are left out",
    "nesting": "tactics at every nesting level, in the REPL's (info tree) order, as LeanDojo; "
               "none run on no goals, none whose text holds '·'; 't <;> s' is one tactic (the REPL "
               "reports t and each run of s); a tactic re-run on the same span (all_goals, "
               "any_goals, repeat) is kept once",
    "state_after": "the REPL gives only the goals before a tactic: state_after is the state before "
                   "the next tactic of the same block (by position, ';' and column layout), with the "
                   "goals focused by following '·' blocks joined in front; 'no goals' after the last "
                   "tactic of a block (wrong for try/first/all_goals/repeat bodies)",
    "premises": "usedConstants resolved against the project's declarations, then --corpus; only "
                "those the tactic text names are annotated (one entry per occurrence); simp lemmas "
                "simp did not use are not annotated (LeanDojo annotates them); without "
                "usedConstants (older REPLs, e.g. at v4.10.0-rc1) names in the text are looked up under the "
                "theorem's namespaces and opens; --corpus premises point at their declaration's "
                "span, not their name's",
    "positions": "REPL positions (line 1-based, column 0-based) as LeanDojo's 1-based [line, column]; "
                 "theorem start at its keyword, end at its last code character",
    "tactic_text": "sliced from the source at the REPL's span; later lines of a multi-line tactic "
                   "lose its first line's indentation (as LeanDojo's tactic); the annotated text is "
                   "the same text",
    "states": "the REPL's goals strings (an old REPL flattens short goal lists onto one line)",
    "corpus": "project premises from the source scan: named declarations, inductive constructors, "
              "structure fields and constructors; no auto-generated names (instances without a "
              "name, equation lemmas); with --corpus, the files of that corpus the project imports "
              "(transitively) come first",
}

SKIP_FAILED_FILE = "theorems of files the REPL could not run"
SKIP_ERROR = "theorems with an error message"
SKIP_SORRY = "theorems with a sorry"
SKIP_NO_TACTICS = "theorems whose `by` proof got no tactics from the REPL"
SKIP_NO_GOALS = "tactics run on no goals"
SKIP_CDOT = "tactics whose text holds '·'"
SKIP_THEN = "runs of the right side of '<;>'"
SKIP_REPEAT = "repeated runs of a tactic on one span"
SKIP_MALFORMED = "tactic entries without a usable span"
SKIP_LONG_STATE = f"tactics with a state over {DEFAULT_MAX_STATE_CHARS:,} characters"


# -- the REPL's answer ------------------------------------------------------------------------

@dataclass
class Step:
    """One tactic of the answer (or a `t <;> s` made of several), as character indices."""

    start: int
    end: int
    goals: str
    repl_text: str
    used: set[str] | None  # None: the REPL sent no usedConstants
    order: int
    state_after: str = NO_GOALS


def answer_error(answer: Any) -> str | None:
    """Why an answer is not a command's answer (a REPL error `{"message": ...}`), or None."""
    if not isinstance(answer, dict):
        return f"the REPL answered {type(answer).__name__}, not an object"
    if "message" in answer and "env" not in answer:
        return " ".join(str(answer["message"]).split()) or "the REPL answered an empty message"
    return None


def _index(f: LeanFile, pos: Any) -> int | None:
    if not (isinstance(pos, dict) and isinstance(pos.get("line"), int) and isinstance(pos.get("column"), int)):
        return None
    return f.index(pos["line"], pos["column"])


def parse_steps(f: LeanFile, answer: dict, skipped: Counter) -> list[Step]:
    steps = []
    for k, t in enumerate(answer.get("tactics") or []):
        start = _index(f, t.get("pos")) if isinstance(t, dict) else None
        end = _index(f, t.get("endPos")) if isinstance(t, dict) else None
        if start is None or end is None or end < start or not isinstance(t.get("goals"), str):
            skipped[SKIP_MALFORMED] += 1
            continue
        used = t.get("usedConstants")
        steps.append(Step(start, end, t["goals"].strip(), str(t.get("tactic", "")),
                          set(map(str, used)) if isinstance(used, list) else None, k))
    return steps


def _message_spans(f: LeanFile, answer: dict) -> tuple[list[tuple[int, str]], list[int]]:
    """(index, text) of error messages, and indices of sorries (their warnings included)."""
    errors, sorries = [], []
    for m in answer.get("messages") or []:
        if not isinstance(m, dict):
            continue
        at = _index(f, m.get("pos"))
        if at is None:
            continue
        data = str(m.get("data", ""))
        if m.get("severity") == "error":
            errors.append((at, data))
        elif "declaration uses 'sorry'" in data:
            sorries.append(at)
    for s in answer.get("sorries") or []:
        at = _index(f, s.get("pos")) if isinstance(s, dict) else None
        if at is not None:
            sorries.append(at)
    return errors, sorries


# -- tactics of one theorem -----------------------------------------------------------------

def _skip_space(code: str, i: int) -> int:
    while i < len(code) and code[i].isspace():
        i += 1
    return i


def _group_end(code: str, i: int) -> int:
    """Index just past the bracket group opening at code[i]."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] in "([{⦃⟨":
            depth += 1
        elif code[j] in ")]}⦄⟩":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(code)


def merge_then(steps: list[Step], code: str, skipped: Counter) -> list[Step]:
    """`t <;> s` as one step (t's goals, both sides' constants); the runs of s are dropped."""
    by_start: dict[int, list[Step]] = {}
    for s in steps:
        by_start.setdefault(s.start, []).append(s)
    absorbed: set[int] = set()
    out = []
    for s in sorted(steps, key=lambda s: (s.start, -s.end, s.order)):
        if id(s) in absorbed:
            continue
        end, used = s.end, s.used
        while code.startswith("<;>", j := _skip_space(code, end)):
            p = _skip_space(code, j + 3)
            if p < len(code) and code[p] in "([⟨":
                right = _group_end(code, p)
            elif by_start.get(p):
                right = max(r.end for r in by_start[p])
            else:  # the right side never ran (the left closed every goal): to the end of its line
                nl = code.find("\n", p)
                right = len(code[:nl if nl >= 0 else len(code)].rstrip())
            for r in steps:
                if p <= r.start and r.end <= right and id(r) not in absorbed and r is not s:
                    absorbed.add(id(r))
                    skipped[SKIP_THEN] += 1
                    if r.used is not None:
                        used = (used or set()) | r.used
            end = max(end, right)
        out.append(Step(s.start, end, s.goals, s.repl_text, used, s.order) if end != s.end else s)
    return sorted(out, key=lambda s: s.order)


def _dedupe_spans(steps: list[Step], skipped: Counter) -> list[Step]:
    seen: set[tuple[int, int]] = set()
    out = []
    for s in steps:
        if (s.start, s.end) in seen:
            skipped[SKIP_REPEAT] += 1
            continue
        seen.add((s.start, s.end))
        out.append(s)
    return out


@dataclass
class _Block:
    column: int
    items: list[tuple[str, int]] = field(default_factory=list)  # ("tactic" | "bullet", step index)


def _column(code: str, i: int) -> int:
    return i - (code.rfind("\n", 0, i) + 1)


def _bullet_column(code: str, i: int) -> int | None:
    """The column of the `·` (or `.`) that starts the line of index `i`, if only bullets precede it."""
    line_start = code.rfind("\n", 0, i) + 1
    prefix = code[line_start:i]
    if prefix.strip() and not prefix.replace("·", " ").replace(".", " ").strip():
        return line_start + len(prefix) - len(prefix.lstrip()) - line_start
    return None


def set_states_after(steps: list[Step], code: str) -> None:
    """Each step's state_after from the states before the steps after it (module docstring)."""
    order = sorted(range(len(steps)), key=lambda i: (steps[i].start, -steps[i].end, steps[i].order))
    parent: dict[int, int] = {}
    stack: list[int] = []
    for i in order:
        s = steps[i]
        while stack and not (steps[stack[-1]].start <= s.start and s.end <= steps[stack[-1]].end
                             and (steps[stack[-1]].start, steps[stack[-1]].end) != (s.start, s.end)):
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    siblings: dict[int, list[int]] = {}
    for i in order:
        siblings.setdefault(parent[i], []).append(i)
    for group in siblings.values():
        blocks: list[_Block] = []
        open_blocks: list[_Block] = []  # innermost last
        block_of: dict[int, _Block] = {}
        prev = None
        for i in group:
            s = steps[i]
            col = _column(code, s.start)
            bullet = _bullet_column(code, s.start)
            glue = code[steps[prev].end:s.start] if prev is not None and steps[prev].end <= s.start else None
            if bullet is not None:
                while open_blocks and open_blocks[-1].column > bullet:
                    open_blocks.pop()
                if not (open_blocks and open_blocks[-1].column == bullet):
                    open_blocks.append(_Block(bullet))
                    blocks.append(open_blocks[-1])
                open_blocks[-1].items.append(("bullet", i))
                block = _Block(col)
                open_blocks.append(block)
                blocks.append(block)
            elif glue is not None and glue.strip() and not glue.replace(";", " ").strip():
                block = block_of[prev]  # `t; s`
            elif glue is not None and not glue.strip() and "\n" in glue:
                while open_blocks and open_blocks[-1].column > col:
                    open_blocks.pop()
                if open_blocks and open_blocks[-1].column == col:
                    block = open_blocks[-1]
                else:
                    block = _Block(col)
                    open_blocks.append(block)
                    blocks.append(block)
            else:  # the first tactic of a block (after `by`, `=>`, ...)
                block = _Block(col)
                open_blocks.append(block)
                blocks.append(block)
            block.items.append(("tactic", i))
            block_of[i] = block
            prev = i
        for block in blocks:
            for k, (kind, i) in enumerate(block.items):
                if kind != "tactic":
                    continue
                after = []
                j = k + 1
                while j < len(block.items) and block.items[j][0] == "bullet":
                    after.append(steps[block.items[j][1]].goals)
                    j += 1
                if j < len(block.items):
                    after.append(steps[block.items[j][1]].goals)
                steps[i].state_after = "\n\n".join(after) if after else NO_GOALS


def proof_steps(steps: list[Step], code: str, skipped: Counter) -> list[Step]:
    """The steps of one theorem as LeanDojo would record them, with their state_after, in the
    REPL's order (module docstring: nesting, state_after)."""
    kept = []
    for s in steps:
        if not s.goals or s.goals == NO_GOALS:
            skipped[SKIP_NO_GOALS] += 1
        else:
            kept.append(s)
    kept = _dedupe_spans(merge_then(kept, code, skipped), skipped)
    set_states_after(kept, code)
    return kept


def fix_indentation(text: str, indent: int) -> str:
    """LeanDojo's `_fix_indentation`: later lines lose up to `indent` leading spaces (a line of
    only spaces shorter than that is dropped, as there)."""
    lines = text.split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        for i in range(len(line)):
            if line[i] != " " or i >= indent:
                out.append(line[i:])
                break
    return "\n".join(out)


# -- premises -------------------------------------------------------------------------------

# A name as written (`Nat.add_comm`, `foo.2`, `h.2.symm`), or a `.field` after a term (`(h x).le`, `).2.trans`).
_TOKEN = re.compile(r"(?<![\w'!?.])(\.?)([\w'!?]+(?:\.[\w'!?]+)*)")


@dataclass
class PremiseIndex:
    """Where premises are defined: the project's own declarations, then an existing corpus."""

    # full name -> [(path, name pos, name end)]: one name may be declared in several files of a
    # project (in modules that never meet); the using file's own declaration is preferred
    project: dict[str, list[tuple[str, list[int], list[int]]]]
    corpus: Corpus | None = None

    def locate(self, name: str, path: str | None = None) -> dict | None:
        hits = self.project.get(name)
        if hits:
            hit = next((h for h in hits if h[0] == path), hits[0])
            return {"full_name": name, "def_path": hit[0], "def_pos": hit[1], "def_end_pos": hit[2]}
        if self.corpus is not None:
            i = self.corpus.locate(name)
            if i is not None:
                p = self.corpus.premises[i]
                return {"full_name": name, "def_path": p.path, "def_pos": list(p.start),
                        "def_end_pos": list(p.end)}
        return None

    def known(self, name: str) -> bool:
        return name in self.project or (self.corpus is not None and name in self.corpus.by_name)


def _pick(token: str, names: list[str], decl: Declaration) -> str | None:
    if token in names:
        return token
    hits = [n for n in names if n.endswith("." + token)]
    if not hits:
        return None
    preferred = [n for n in hits if any(n == f"{ns}.{token}" for ns in decl.namespaces)]
    return min(preferred or hits, key=lambda n: (len(n), n))


def _text_candidates(token: str, decl: Declaration, index: PremiseIndex) -> list[str]:
    """Without usedConstants: what a name written in a proof may mean (as written, or under
    the theorem's namespaces, its own name's prefixes and the `open`s)."""
    prefixes = list(decl.namespaces) + list(decl.opens)
    if decl.name:
        parts = decl.name.split(".")[:-1]
        prefixes += [".".join(parts[:k]) for k in range(1, len(parts) + 1)]
    return [n for n in [token] + [f"{p}.{token}" for p in prefixes] if index.known(n)]


def _resolve(candidate: str, field_access: bool, resolved: list[str] | None, decl: Declaration,
             index: PremiseIndex) -> str | None:
    if resolved is not None:
        names = [n for n in resolved if n.endswith("." + candidate)] if field_access else resolved
        return _pick(candidate, names, decl)
    if field_access:
        return None
    found = _text_candidates(candidate, decl, index)
    return found[0] if found else None


def _token_spans(text: str, code: str, resolved: list[str] | None, decl: Declaration,
                 index: PremiseIndex) -> list[tuple[int, int, str]]:
    """(start, end, full name) of each premise the text names, in order."""
    spans = []
    for m in _TOKEN.finditer(code):
        dot, token, begin = m.group(1), m.group(2), m.start(2)
        skip = len("_root_.") if token.startswith("_root_.") else 0
        pieces = token[skip:].split(".")
        for k in range(len(pieces), 0, -1):  # the longest prefix: `foo.2`, `foo.mp` name `foo`
            candidate = ".".join(pieces[:k])
            if candidate and not candidate[0].isdigit() and candidate[0] not in "'!?":
                hit = _resolve(candidate, bool(dot), resolved, decl, index)
                if hit:
                    spans.append((begin, begin + skip + len(candidate), hit))
                    break
        offset = begin + skip
        for k, piece in enumerate(pieces):  # `h.2.symm`: a field of a projection
            if k > 0 and pieces[k - 1].isdigit() and piece and not piece[0].isdigit():
                hit = _resolve(piece, True, resolved, decl, index)
                if hit and not (spans and spans[-1][1] > offset):
                    spans.append((offset, offset + len(piece), hit))
            offset += len(piece) + 1
    return spans


def annotate(text: str, used: set[str] | None, decl: Declaration, index: PremiseIndex,
             stats: Counter, path: str | None = None) -> tuple[str, list[dict]]:
    """`text` with `<a>...</a>` around the premises it names, and one provenance per occurrence."""
    resolved = sorted(n for n in used if index.known(n)) if used is not None else None
    if used is not None:
        stats["used_constants"] += len(used)
        stats["used_in_corpus"] += len(resolved)
    parts, provenance, cur = [], [], 0
    spans = _token_spans(text, mask_non_code(text), resolved, decl, index)
    for begin, end, name in spans:
        parts += [text[cur:begin], "<a>", text[begin:end], "</a>"]
        cur = end
        provenance.append(index.locate(name, path))
    parts.append(text[cur:])
    stats["annotated"] += len(provenance)
    if resolved is not None:
        stats["used_in_corpus_not_named"] += len(set(resolved) - {name for _, _, name in spans})
    return "".join(parts), provenance


# -- one file -------------------------------------------------------------------------------

@dataclass
class FileResult:
    records: list[dict]
    errors: list[str]
    has_tactics: bool


def file_records(f: LeanFile, answer: dict, index: PremiseIndex, origin: tuple[str, str],
                 skipped: Counter, stats: Counter) -> FileResult:
    """The theorem records of one file from its REPL answer."""
    steps = parse_steps(f, answer, skipped)
    errors, sorries = _message_spans(f, answer)
    by_decl: dict[int, list[Step]] = {}
    theorems = f.theorems()
    for s in steps:
        for k, d in enumerate(theorems):
            if d.start <= s.start < d.end:
                by_decl.setdefault(k, []).append(s)
                break
    records = []
    for k, d in enumerate(theorems):
        if any(d.start <= at <= d.end for at, _ in errors):
            skipped[SKIP_ERROR] += 1
            continue
        if any(d.start <= at <= d.end for at in sorries):
            skipped[SKIP_SORRY] += 1
            continue
        own = by_decl.get(k, [])
        if not own and re.search(r"(?<![\w'!?.])by(?![\w'!?])", f.code[d.proof_start:d.end]):
            skipped[SKIP_NO_TACTICS] += 1
            continue
        tactics = []
        for s in proof_steps(own, f.code, skipped):
            raw = f.text[s.start:s.end]
            text = fix_indentation(raw, f.column(s.start)) if raw.strip() else s.repl_text
            if "·" in text:
                skipped[SKIP_CDOT] += 1
                continue
            if max(len(s.goals), len(s.state_after)) > DEFAULT_MAX_STATE_CHARS:
                skipped[SKIP_LONG_STATE] += 1
                continue
            annotated, premises = annotate(text, s.used, d, index, stats, f.path)
            tactics.append({"tactic": text, "annotated_tactic": [annotated, premises],
                            "state_before": s.goals, "state_after": s.state_after})
        records.append({"url": origin[0], "commit": origin[1], "file_path": f.path,
                        "full_name": d.name, "start": f.leandojo_pos(d.start),
                        "end": f.leandojo_pos(d.end), "traced_tactics": tactics})
    return FileResult(records, [msg for _, msg in errors], "tactics" in answer)


# -- corpus ---------------------------------------------------------------------------------

def _premise_row(f: LeanFile, d: Declaration) -> dict:
    code = f.text[d.start:d.proof_start if d.kind in THEOREM_KINDS else d.end].rstrip()
    if d.kind not in THEOREM_KINDS and len(code) > CODE_CHARS:
        code = code[:CODE_CHARS] + " ⋯"
    return {"full_name": d.name, "code": code, "start": f.leandojo_pos(d.start),
            "end": f.leandojo_pos(d.end), "kind": d.kind}


def premise_index(files: list[LeanFile], corpus: Corpus | None) -> PremiseIndex:
    project: dict[str, list] = {}
    for f in files:
        for d in f.declarations:
            if d.name:
                project.setdefault(d.name, []).append((f.path, f.leandojo_pos(d.name_start),
                                                       f.leandojo_pos(d.name_end)))
    return PremiseIndex(project, corpus)


def corpus_rows(files: list[LeanFile], corpus: Corpus | None) -> tuple[list[dict], int]:
    """Per file, imported files first: the `--corpus` files the project imports (transitively),
    then the project's files. Also the number of premises from `--corpus`."""
    own = {f.path: f for f in files}
    own_modules = {module_name(f.path): f.path for f in files}
    ext_modules = {module_name(p): i for i, p in enumerate(corpus.files)} if corpus else {}
    imports: dict[str, list[str]] = {}
    ext_direct: set[int] = set()
    for f in files:
        paths = []
        for m in f.imports:
            if m in own_modules:
                paths.append(own_modules[m])
            elif m in ext_modules:
                ext_direct.add(ext_modules[m])
                paths.append(corpus.files[ext_modules[m]])
        imports[f.path] = list(dict.fromkeys(paths))
    rows = []
    n_ext = 0
    if corpus is not None and ext_direct:
        import numpy as np
        mask = np.zeros(len(corpus.files), dtype=bool)
        for i in ext_direct:
            mask |= corpus.closure_mask(i)
            mask[i] = True
        for i in np.flatnonzero(mask):
            path = corpus.files[i]
            if path in own:
                continue
            prems = [{"full_name": p.full_name, "code": p.code, "start": list(p.start), "end": list(p.end),
                      "kind": p.kind, "args": list(p.args), "goal": p.goal} for p in corpus.premises_of(path)]
            n_ext += len(prems)
            rows.append({"path": path, "imports": [corpus.files[g] for g in corpus.imports[i]],
                         "premises": prems})
    graph = graphlib.TopologicalSorter({p: [q for q in imports[p] if q in own] for p in sorted(own)})
    try:
        order = list(graph.static_order())
    except graphlib.CycleError:
        log.warning("import cycle among the project's files: corpus.jsonl lists them in path order")
        order = sorted(own)
    for path in order:
        f = own[path]
        seen: set[str] = set()
        prems = []
        for d in f.declarations:
            if d.name and d.name not in seen:
                seen.add(d.name)
                prems.append(_premise_row(f, d))
        rows.append({"path": path, "imports": imports[path], "premises": prems})
    return rows, n_ext


# -- the whole project ----------------------------------------------------------------------

def _split_sizes(n_val: float, n_test: float, n: int) -> tuple[float | int, float | int]:
    """--n-val/--n-test as make_split takes them (a count, or a fraction if < 1); counts that
    do not fit the theorems found are cut down (said in a warning), not refused after the run."""
    k_val, k_test = (v if 0 < v < 1 else int(v) for v in (n_val, n_test))
    if isinstance(k_val, int) and isinstance(k_test, int) and k_val + k_test > n:
        fit_val = min(k_val, n)
        fit_test = min(k_test, n - fit_val)
        log.warning("only %d theorems: val and test get %d and %d, not %d and %d", n, fit_val, fit_test,
                    k_val, k_test)
        return fit_val, fit_test
    return k_val, k_test


@dataclass
class _Run:
    records: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    without_tactics: list[str] = field(default_factory=list)
    with_errors: list[dict] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    links: Counter = field(default_factory=Counter)


def _run_files(project: Path, files: list[LeanFile], run_file: RunFile, index: PremiseIndex,
               origin: tuple[str, str], run: _Run, progress: bool) -> None:
    from prover.tracing.leandojo import TraceUnavailableError
    from prover.utils.progress import progress_bar
    answered = 0
    with progress_bar(files, desc="REPL trace", unit="file", disable=not progress) as bar:
        for n, f in enumerate(bar):
            try:
                answer = run_file(project / f.path)
                problem = answer_error(answer)
                answered += 1
            except Exception as e:  # noqa: BLE001 - one file's failure must not end an hours-long run
                answer, problem = None, f"{type(e).__name__}: {' '.join(str(e).split())}"
                if n + 1 == ABORT_AFTER and answered == 0:
                    raise TraceUnavailableError(
                        f"the REPL answered none of the first {ABORT_AFTER} files (the last, {f.path}: "
                        f"{problem[:300]}); is the project built (lake build)?") from e
            if problem is not None:
                log.warning("REPL trace: %s failed: %s", f.path, problem)
                run.failed.append({"path": f.path, "message": problem})
                run.skipped[SKIP_FAILED_FILE] += len(f.theorems())
                continue
            result = file_records(f, answer, index, origin, run.skipped, run.links)
            run.records += result.records
            if not result.has_tactics:
                run.without_tactics.append(f.path)
            if result.errors:
                run.with_errors.append({"path": f.path, "errors": len(result.errors), "first": result.errors[0]})
            bar.set_postfix(theorems=len(run.records), failed=len(run.failed), refresh=False)


def trace_project_repl(project: Path, out: Path, run_file: RunFile, *, url: str | None = None,
                       commit: str | None = None, corpus: Corpus | None = None, n_val: float = 0.02,
                       n_test: float = 0.02, seed: int = 3407, progress: bool = True) -> dict:
    """Trace every `.lean` file of `project` that declares a theorem through `run_file` and
    write the dataset to `out` (corpus.jsonl, random/{train,val,test}.json, metadata.json).
    Returns the metadata.

    `run_file(path)` runs `{"path": str(path), "allTactics": true}` in a REPL started in the
    project and returns its raw answer. A file whose answer is a REPL error (`{"message": ...}`),
    or whose run raised, is recorded in metadata `files_failed` and its theorems left out (if
    the first ABORT_AFTER files all raise, the REPL is not working: TraceUnavailableError); a
    file whose answer has no `tactics` is listed in `files_without_tactics`, one with error
    messages in `files_with_errors`. `corpus`: an existing LeanDojo corpus (`load_corpus`) to
    resolve library premises (Mathlib, ...). `url`, `commit`: what the records carry (default:
    the project's path and "unknown")."""
    project = Path(project)
    origin = (url or str(project.resolve()), commit or "unknown")
    files, run = [], _Run()
    for path in lean_files(project):
        rel = path.relative_to(project).as_posix()
        try:
            files.append(LeanFile.scan(path.read_bytes().decode("utf-8"), rel))
        except UnicodeDecodeError as e:
            run.failed.append({"path": rel, "message": f"not valid UTF-8 at byte {e.start}"})
    to_run = [f for f in files if f.theorems()]
    _run_files(project, to_run, run_file, premise_index(files, corpus), origin, run, progress)

    out.mkdir(parents=True, exist_ok=True)
    rows, n_from_corpus = corpus_rows(files, corpus)
    write_jsonl(out / "corpus.jsonl", rows)
    # Parsed back with our reader: what we write is what the pipeline will read.
    src = f"REPL trace of {origin[0]}@{origin[1]}"
    theorems = [parse_theorem(r, src, i, None) for i, r in enumerate(run.records)]
    split = make_split(theorems, "random", *_split_sizes(n_val, n_test, len(theorems)), seed=seed)
    write_split(split, out / "random")
    for reason, n in sorted(run.skipped.items()):
        log.info("REPL trace: left out %d %s", n, reason)
    n_premises = sum(len(r["premises"]) for r in rows)
    toolchain = project / "lean-toolchain"
    meta = {
        "backend": "repl", "url": origin[0], "commit": origin[1], "project": str(project.resolve()),
        "lean_toolchain": toolchain.read_text().strip() if toolchain.is_file() else None,
        "files": len(rows), "project_files": len(files), "files_run": len(to_run),
        "files_failed": run.failed, "files_without_tactics": run.without_tactics,
        "files_with_errors": run.with_errors,
        "premises": n_premises, "premises_project": n_premises - n_from_corpus,
        "premises_from_corpus": n_from_corpus, "corpus": getattr(corpus, "source", None),
        "theorems": len(theorems), "tactics": sum(len(t.traced_tactics) for t in theorems),
        "skipped": dict(sorted(run.skipped.items())),
        "premise_links": {k: run.links[k] for k in ("used_constants", "used_in_corpus", "annotated",
                                                    "used_in_corpus_not_named")},
        "splits": {"random": {k: len(v) for k, v in split.parts().items()}},
        "approximations": APPROXIMATIONS, "created": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    write_json(out / "metadata.json", meta)
    return meta


# -- the command ------------------------------------------------------------------------------

def _git(project: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def project_origin(project: Path, url: str | None = None, commit: str | None = None) -> tuple[str, str]:
    """The URL and commit records carry: the given ones, else the folder's git remote `origin`
    (a GitHub remote as https://github.com/OWNER/NAME) and HEAD; else its path and "unknown"."""
    if url is None:
        remote = _git(project, "remote", "get-url", "origin") if (project / ".git").exists() else None
        if remote:
            m = re.match(r"^(?:git@github\.com:|https://github\.com/)([\w.-]+/[\w.-]+?)(?:\.git)?/?$", remote)
            url = f"https://github.com/{m.group(1)}" if m else remote
        else:
            url = str(project.resolve())
    if commit is None:
        commit = (_git(project, "rev-parse", "HEAD") if (project / ".git").exists() else None) or "unknown"
    return url, commit


def load_corpus(path: str | Path) -> Corpus:
    """`--corpus`: a dataset folder (its corpus.jsonl[.gz]) or a corpus.jsonl file."""
    p = Path(path)
    corpus = Corpus.load(p / "corpus.jsonl" if p.is_dir() else p)
    corpus.source = str(p)  # type: ignore[attr-defined]  # said in metadata.json
    return corpus


@contextmanager
def open_runner(project: Path, settings: Any = None) -> Iterator[RunFile]:
    """The real REPL: `prover.env.repl_session.open_file_runner` (imported only here), with
    `settings` its `ReplConfig` (None: its defaults)."""
    from prover.tracing.leandojo import TraceUnavailableError
    from prover.env import leandojo_env
    try:
        from prover.env.repl_session import open_file_runner
    except ImportError as e:
        raise TraceUnavailableError(f"--backend repl needs prover.env.repl_session.open_file_runner: {e}") from None
    if not leandojo_env.lean_toolchain_available(need_lean=False):  # the REPL needs lake only
        raise TraceUnavailableError("--backend repl runs the project's files in the Lean REPL, and no Lean "
                                    "toolchain (lake, or elan) was found on this machine")
    with open_file_runner(project, settings) as run_file:
        yield run_file


def check_project(project: str | Path) -> Path:
    from prover.tracing.leandojo import TraceArgumentError
    path = Path(project).expanduser()
    if not path.is_dir():
        raise TraceArgumentError(f"PROJECT {project}: not a folder (--backend repl traces a local Lean project)")
    if not lean_files(path):
        raise TraceArgumentError(f"PROJECT {project}: no .lean files in it")
    return path.resolve()


def trace_project(project: str | Path, out: str | Path, *, commit: str | None = None, url: str | None = None,
                  corpus: str | Path | None = None, n_val: float = 0.02, n_test: float = 0.02,
                  seed: int = 3407, settings: Any = None, say: Callable[[str], None] = print) -> dict:
    """`prover data trace PROJECT --backend repl`: check the arguments, open the REPL, trace."""
    from prover.tracing.leandojo import check_out
    path, out_path = check_project(project), check_out(out)
    url, commit = project_origin(path, url, commit)
    library = load_corpus(corpus) if corpus else None  # before the REPL starts: a bad path fails now
    say(f"tracing {path} ({url} at {commit}) through the Lean REPL: every file with a theorem is "
        f"elaborated once (the project must be built: lake build)")
    with open_runner(path, settings) as run_file:
        meta = trace_project_repl(path, out_path, run_file, url=url, commit=commit, corpus=library,
                                  n_val=n_val, n_test=n_test, seed=seed)
    if meta["files_failed"]:
        say(f"{len(meta['files_failed'])} of {meta['files_run']} files failed in the REPL (metadata.json: "
            f"files_failed), e.g. {meta['files_failed'][0]['path']}: {meta['files_failed'][0]['message'][:200]}")
    return meta
