"""ReplEnv: tactics run in Lean through the Lean REPL (lean-interact), on any Lean since v4.8.

A theorem is opened in one of two ways (`ReplTarget`):
- from text: its `header` (imports, options, opens; for a LeanDojo record the file up to the
  theorem) is elaborated once per REPL process and reused by environment id (`ReplSession`),
  then `STATEMENT := by sorry` in that environment hands out the root proof state;
- from a project file (`prove-sorries`): one `FileCommand` on the file, and the `sorry` at the
  target's position is the root (any sorry: inside a longer proof too).

Proof states are the REPL's goals joined by a blank line, `case` tags kept: LeanDojo's
`state_before` shape, which our models were trained on.

What a tactic's answer means (both REPL dialects: the fork lean-interact builds sends
`proofStatus`; the upstream REPL before 2025, e.g. at v4.10.0-rc1, does not):
- a REPL-level `message`, an error message, or a `proofStatus` of "Error: ..." or
  "Incomplete: contains sorry": the tactic failed (the state it ran on stays usable);
- goals left: a new state;
- no goals and no error: a *candidate*. The REPL can accept tactic-mode proofs that do not
  compile (REPL issue #44; `self_proof_*` in its tests), and a proofStatus is not sent by
  every version, so a candidate counts only after the whole theorem (statement and the found
  tactics, no sorry) elaborates as one command in the header's environment with no error and
  no sorry warning; for a file's sorry, the file with the proof in place must elaborate with
  no error and one sorry fewer. A rejected candidate is a failed tactic, with Lean's error.
- no answer within `timeout`: lean-interact kills the REPL; the tactic is a timeout and the
  next call restarts the REPL. A crash (or an out-of-memory kill) restarts it and retries
  once; a second crash ends this theorem as an environment failure. The run always goes on.
After a restart every id is gone: a state is rebuilt by replaying the tactics that made it.
"""
from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from prover.env.base import (
    ENV_REPL,
    EnvCrash,
    EnvFailure,
    EnvInitError,
    GivenUp,
    Liveness,
    ProofEnv,
    ProofFinished,
    State,
    TacticError,
    TacticResult,
    Timeout,
    contains_sorry,
    normalize_ws,
)
from prover.env.repl_session import (HeaderError, ReplDied, ReplSession, ReplTimeout,
                                     error_messages, uses_sorry)
from prover.data.lean_text import mask_non_code
from prover.env.leandojo_env import TheoremRef
from prover.env.proof_text import standalone_proof

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplTarget:
    """What the REPL elaborates to reach a theorem's root goal."""

    name: str
    # Commands elaborated once per REPL and reused, each in the environment of the one before
    # (imports first: a command that imports cannot be run in an environment). May be empty.
    header: tuple[str, ...] = ()
    statement: str = ""  # `theorem NAME binders : type`, without `:=`
    file: str | None = None  # a project file: its sorry at `position` is the root
    position: tuple[int, int] | None = None  # (line 1-based, column 0-based), the REPL's convention

    def __post_init__(self) -> None:
        if isinstance(self.header, str):  # one command, as MiniF2F records have it
            object.__setattr__(self, "header", (self.header,) if self.header.strip() else ())
        if self.file is None and not self.statement.strip():
            raise ValueError(f"{self.name}: a REPL target needs a statement or a file")
        if self.file is not None and self.position is None:
            raise ValueError(f"{self.name}: a file target needs the sorry's position")


def goals_text(goals: list[str]) -> str:
    """The REPL's goals as one state text, LeanDojo's way: goals apart by a blank line."""
    return "\n\n".join(g.strip("\n") for g in goals)


def _failure_of(answer: dict) -> str | None:
    """Why a tactic's answer is a failure, or None when it is not one."""
    errors = error_messages(answer)
    if errors:
        return errors[0]
    status = answer.get("proofStatus") or ""
    if status.startswith("Error") or "contains sorry" in status:
        return f"proofStatus: {' '.join(status.split())}"
    return None


class _Rebuild(Exception):
    """A state could not be rebuilt after a restart (Lean answered differently)."""


class ReplEnv(ProofEnv):
    """One theorem on a shared ReplSession. States are ours; the REPL's ids sit behind them."""

    name = ENV_REPL

    def __init__(self, target: ReplTarget, session: ReplSession,
                 patch_file: Callable[[list[str]], bytes] | None = None) -> None:
        """`patch_file(tactics)`: a file target's file with the proof in place of its sorry."""
        super().__init__()
        if target.file is not None and patch_file is None:
            raise ValueError(f"{target.name}: a file target needs patch_file to check a proof")
        self.target = target
        self.session = session
        self.patch_file = patch_file
        self._live = Liveness(self.name)
        self._texts: dict[int, str] = {}
        self._parents: dict[int, tuple[int, str]] = {}
        self._repl_ids: dict[int, int] = {}  # our state -> the REPL's, in `_generation`
        self._generation = -1
        self._file_sorries = 0  # sorries the target's file has (file targets)

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        self._texts.clear()
        self._parents.clear()
        self._live.dead = None
        cfg = self.session.cfg
        for attempt in range(cfg.max_restarts + 1):
            try:
                self._texts[0] = self._open_root()
            except (ReplDied, ReplTimeout) as e:
                kind = "timeout" if isinstance(e, ReplTimeout) else "crash"
                self._record(kind, f"while opening: {e}", None, recovered=attempt < cfg.max_restarts)
                continue
            except (HeaderError, EnvInitError) as e:
                message = f"repl: cannot open {self.target.name}: {e}"
                self._record("init", message, None, recovered=False)
                raise EnvInitError(message) from e
            self._live.is_open = True
            return
        self._give_up(f"repl: the REPL failed {cfg.max_restarts + 1} times opening {self.target.name}")

    def close(self) -> None:
        self._live.is_open = False  # the session (and its REPL) belongs to the worker

    @property
    def initial_state(self) -> State:
        self._live.check()
        return State(self._texts[0], 0)

    def _open_root(self) -> str:
        """Elaborate up to the root goal in the current REPL; returns its text."""
        t, s = self.target, self.session
        if t.file is not None:
            answer = s.file_sorries(Path(t.file))
            sorries = answer.get("sorries", [])
            self._file_sorries = len(sorries)
            found = [x for x in sorries if _pos(x.get("pos")) == t.position and "proofState" in x]
            if not found:
                where = ", ".join(f"{_pos(x.get('pos'))}" for x in sorries) or "none"
                errors = error_messages(answer)
                raise EnvInitError(f"no sorry at {t.position} in {t.file} (Lean's sorries: {where})"
                                   + (f"; Lean: {errors[0]}" if errors else ""))
            root = found[0]
        else:
            answer = s.command(f"{t.statement} := {s.cfg.root}", env=s.header_env(t.header))
            sorries = [x for x in answer.get("sorries", []) if "proofState" in x]
            if error_messages(answer) or not sorries:
                errors = error_messages(answer)
                raise EnvInitError(f"the statement does not elaborate: {errors[0] if errors else answer}")
            root = sorries[0]
        self._repl_ids = {0: root["proofState"]}
        self._generation = s.generation
        return goals_text([root["goal"]])

    # -- tactics ---------------------------------------------------------------------------

    def run_tactic(self, state: State, tactic: str) -> TacticResult:
        self._live.check()
        if state.id not in self._texts:
            raise ValueError(f"state {state.id} was not made by this env")
        if contains_sorry(tactic):
            return GivenUp()  # it would close any goal; never asked of Lean
        cfg = self.session.cfg
        for attempt in range(cfg.max_restarts + 1):
            try:
                answer = self.session.step(self._repl_id(state.id), tactic)
                return self._convert(answer, state.id, tactic)
            except ReplTimeout as e:
                message = f"tactic exceeded {cfg.timeout:g}s ({e})"
                self._record("timeout", message, tactic)
                return Timeout(message)
            except (ReplDied, _Rebuild) as e:
                self._record("crash", str(e), tactic, recovered=attempt < cfg.max_restarts)
        self._give_up(f"repl: the REPL failed {cfg.max_restarts + 1} times on {self.target.name} "
                      f"running {tactic!r}: {self.failures[-1].message}")

    def _convert(self, answer: dict, parent: int, tactic: str) -> TacticResult:
        failure = _failure_of(answer)
        if failure is not None:
            return TacticError(failure)
        goals = answer.get("goals") or []
        if goals:
            sid = len(self._texts)
            self._texts[sid] = goals_text(goals)
            self._parents[sid] = (parent, tactic)
            self._repl_ids[sid] = answer["proofState"]
            return State(self._texts[sid], sid)
        proof = self._path(parent) + [tactic]
        rejected = self._check(proof)
        if rejected is not None:
            self._record("rejected", rejected, tactic)
            return TacticError(f"the REPL closed every goal, but the whole theorem does not "
                               f"compile: {rejected}")
        return ProofFinished(answer.get("proofStatus", ""))

    def _path(self, sid: int) -> list[str]:
        out = []
        while sid in self._parents:
            sid, tactic = self._parents[sid]
            out.append(tactic)
        return out[::-1]

    def _check(self, tactics: list[str]) -> str | None:
        """Lean's objection to the whole proof, or None when it compiles with no sorry."""
        t, s = self.target, self.session
        if t.file is not None:
            return self._check_file(tactics)
        env = s.header_env(t.header)  # the same id unless the REPL restarted since opening
        answer = s.command(f"{t.statement} := {standalone_proof(tactics)}", env=env,
                           timeout=s.cfg.check_timeout)
        errors = error_messages(answer)
        if errors:
            return errors[0]
        if uses_sorry(answer) or answer.get("sorries"):
            return "the proof uses sorry"
        return None

    def _check_file(self, tactics: list[str]) -> str | None:
        return check_patched_file(self.session.file, Path(self.target.file), self.patch_file(tactics),
                                  self._file_sorries - 1)

    def _repl_id(self, sid: int) -> int:
        """The REPL's id of our state `sid` in the current process; after a restart, the
        root is opened again and the state rebuilt by replaying its tactics."""
        if self._generation != self.session.generation:
            if normalize_ws(self._open_root()) != normalize_ws(self._texts[0]):
                raise _Rebuild("after a restart the theorem opened on a different goal")
        path: list[int] = []
        cur = sid
        while cur not in self._repl_ids:
            path.append(cur)
            cur = self._parents[cur][0]
        for node in reversed(path):
            parent, tactic = self._parents[node]
            try:
                answer = self.session.step(self._repl_ids[parent], tactic)
            except ReplTimeout as e:
                raise _Rebuild(f"timed out rebuilding state {node} after a restart") from e
            goals = answer.get("goals") or []
            if _failure_of(answer) or normalize_ws(goals_text(goals)) != normalize_ws(self._texts[node]):
                raise _Rebuild(f"state {node} could not be rebuilt after a restart")
            self._repl_ids[node] = answer["proofState"]
        return self._repl_ids[sid]

    # -- failures --------------------------------------------------------------------------

    def _record(self, kind: str, message: str, tactic: str | None, recovered: bool = True) -> None:
        log.warning("repl %s on %s: %s", kind, self.target.name, message)
        self.failures.append(EnvFailure(kind, message, tactic, recovered))

    def _give_up(self, message: str) -> NoReturn:
        self._live.dead = message
        self._live.is_open = False
        raise EnvCrash(message)


def check_patched_file(run_file: Callable[[Path], dict], path: Path, patched: bytes,
                       sorries_left: int) -> str | None:
    """Lean's objection to `path` with the content `patched`, or None when it elaborates with no
    error and exactly `sorries_left` sorries. It is elaborated from a temporary copy beside the
    file (same folder, so the same project), removed afterwards; `run_file` runs a FileCommand."""
    with tempfile.NamedTemporaryFile("wb", suffix=".lean", dir=path.parent, prefix=".prover-check-",
                                     delete=False) as f:
        f.write(patched)
    try:
        answer = run_file(Path(f.name))
    finally:
        Path(f.name).unlink(missing_ok=True)
    errors = error_messages(answer)
    if errors:
        return errors[0]
    if len(answer.get("sorries", [])) != sorries_left:
        return f"{len(answer.get('sorries', []))} sorries left, not {sorries_left}"
    return None


def _pos(pos: dict | None) -> tuple[int, int] | None:
    return (pos["line"], pos["column"]) if pos else None


_IMPORT_LINE = re.compile(r"^import\s+\S.*$", re.MULTILINE)


def target_from_source(theorem: TheoremRef, project: str | Path | None) -> ReplTarget:
    """A LeanDojo record as the REPL opens it: its file in `project` up to the theorem is the
    header (the imports one command, the rest another, so theorems share the imports'
    elaboration), and the declaration up to its first top-level `:=` is the statement."""
    if not project:
        raise EnvInitError(f"repl: {theorem.full_name} has no header and statement of its own; set "
                           f"env.repl.project to the checkout of {theorem.url} at {theorem.commit}")
    path = Path(project).expanduser() / theorem.file_path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise EnvInitError(f"repl: cannot read {path}: {e}") from e
    lines = text.split("\n")
    line, column = theorem.start  # 1-based, as LeanDojo records them
    if not 1 <= line <= len(lines):
        raise EnvInitError(f"repl: {theorem.full_name} starts at line {line}, past the end of {path}")
    start = sum(len(ln) + 1 for ln in lines[:line - 1]) + column - 1
    code = mask_non_code(text)
    end = _top_level_assign(code, start)
    if end is None:
        raise EnvInitError(f"repl: no `:=` after the statement of {theorem.full_name} in {path}")
    header = text[:start]
    imports_end = max((m.end() for m in _IMPORT_LINE.finditer(mask_non_code(header))), default=0)
    chunks = tuple(c for c in (header[:imports_end], header[imports_end:]) if c.strip())
    return ReplTarget(theorem.full_name, chunks, text[start:end].rstrip())


def _top_level_assign(code: str, start: int) -> int | None:
    """Index of the first `:=` after `start` outside brackets (`(x := 1)` is an argument)."""
    depth = 0
    for i in range(start, len(code) - 1):
        c = code[i]
        if c in "([{⦃⟨":
            depth += 1
        elif c in ")]}⦄⟩":
            depth -= 1
        elif c == ":" and code[i + 1] == "=" and depth == 0:
            return i
    return None
