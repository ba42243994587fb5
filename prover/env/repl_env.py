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
  every version, so a candidate counts only on the one verdict (`prover.env.verdict`) of the
  evidence `prover.env.verify` gathers: the asked statement proved under a fresh name in the
  header's environment, no error, no sorry, `#print axioms` of exactly that name listing
  Lean's standard axioms only, and the kernel's replay of what the check added. For a file's
  sorry, the file with the proof in place must elaborate with no error, its declaration free
  of sorry with standard axioms, and the file's environment must pass the kernel replay. A
  rejected candidate is a failed tactic, with the reason.
- tactic text that could leave a `by` block (`verify.tactic_text_problem`) is a failed tactic,
  never sent to Lean.
- each tactic is sent as `set_option maxHeartbeats N in` the tactic (`env.repl.max_heartbeats`):
  a runaway tactic gets Lean's heartbeat error, a failed tactic, and the REPL lives.
- no answer within `timeout` (the last resort): lean-interact kills the REPL; the tactic is a
  timeout and the next call restarts the REPL. A crash (or an out-of-memory kill) restarts it and retries
  once; a second crash ends this theorem as an environment failure. The run always goes on.
- a REPL past `env.repl.max_memory_gb` is restarted before the next theorem or tactic.
After a restart every id is gone: a state is rebuilt by replaying the tactics that made it.
"""
from __future__ import annotations

import logging
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
    normalize_ws,
)
from prover.env.text_check import contains_sorry
from prover.env.repl_session import HeaderError, ReplDied, ReplSession, ReplTimeout, error_messages
from prover.env.leandojo_env import TheoremRef
from prover.env.source_target import target_parts
from prover.env.text_check import tactic_text_problem
from prover.env.verdict import Verdict
from prover.env.verify import check_file, check_proof

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
    decl: str | None = None  # a file target's declaration (full name), whose axioms are checked

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

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        self._texts.clear()
        self._parents.clear()
        self._live.dead = None
        cfg = self.session.cfg
        self.session.restart_if_over_memory()  # between theorems: nothing live to rebuild
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
        problem = tactic_text_problem([tactic])
        if problem is not None:
            return TacticError(problem)  # it could end the proof it is placed in; never asked of Lean
        cfg = self.session.cfg
        self.session.restart_if_over_memory()  # the states this theorem needs are rebuilt by _repl_id
        for attempt in range(cfg.max_restarts + 1):
            try:
                answer = self.session.step(self._repl_id(state.id), self._wrap(tactic))
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
        verdict = self._check(proof)
        if not verdict.ok:
            self._record("rejected", verdict.reason or "", tactic)
            return TacticError(f"the REPL closed every goal, but the proof does not pass the "
                               f"check: {verdict.reason}")
        return ProofFinished(answer.get("proofStatus", ""), verdict)

    def _wrap(self, tactic: str) -> str:
        """The tactic as sent: under a heartbeat limit, so Lean stops it with an error."""
        return heartbeat_wrapped(tactic, self.session.cfg.max_heartbeats)

    def _path(self, sid: int) -> list[str]:
        out = []
        while sid in self._parents:
            sid, tactic = self._parents[sid]
            out.append(tactic)
        return out[::-1]

    def _check(self, tactics: list[str]) -> Verdict:
        """The one verdict on the whole proof (`prover.env.verify` gathers, `verdict` decides)."""
        t, s = self.target, self.session
        cfg = s.cfg
        if t.file is not None:
            return check_file(s.file, s.command, self._replay, Path(t.file), self.patch_file(tactics),
                              [t.decl], [tactics], cfg.allow_native_decide, cfg.kernel_replay,
                              cfg.check_timeout, original=s.file_sorries(Path(t.file)),
                              accept_without_kernel=cfg.accept_proofs_without_kernel_replay)
        env = s.header_env(t.header)  # the same id unless the REPL restarted since opening
        return check_proof(s.command, env, t.statement, tactics, cfg.allow_native_decide,
                           cfg.check_timeout, full_name=t.name, replay=self._replay,
                           kernel_replay=cfg.kernel_replay,
                           accept_without_kernel=cfg.accept_proofs_without_kernel_replay)

    def _replay(self, env: int) -> tuple[str, int | None]:
        return self.session.replay_in_kernel(env)

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
                answer = self.session.step(self._repl_ids[parent], self._wrap(tactic))
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


def heartbeat_wrapped(tactic: str, max_heartbeats: int) -> str:
    """`set_option maxHeartbeats N in` the tactic (Lean's tactic-level `set_option ... in`,
    whose body is a tactic sequence: the tactic goes on the next line at its own columns, so
    a multi-line tactic keeps its layout). 0: the tactic as it is."""
    return f"set_option maxHeartbeats {max_heartbeats} in\n{tactic}" if max_heartbeats else tactic


def _pos(pos: dict | None) -> tuple[int, int] | None:
    return (pos["line"], pos["column"]) if pos else None


def target_from_source(theorem: TheoremRef, project: str | Path | None) -> ReplTarget:
    """A LeanDojo record as the REPL opens it, from its file in `project`: the header ends at
    the command boundary before the theorem's modifiers, cut into the file's commands so the
    theorems of one file share them, and the statement ends where the signature ends
    (`prover.env.source_target`)."""
    if not project:
        raise EnvInitError(f"repl: {theorem.full_name} has no header and statement of its own; set "
                           f"env.repl.project to the checkout of {theorem.url} at {theorem.commit}")
    path = Path(project).expanduser() / theorem.file_path
    header, statement = target_parts(path, theorem.start[0], theorem.start[1], theorem.full_name)
    return ReplTarget(theorem.full_name, header, statement)
