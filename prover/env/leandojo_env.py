"""LeanDojoEnv: tactics run in Lean through `lean_dojo.Dojo` (lean-dojo 4.x).

What lean-dojo gives us (read from its `interaction/dojo.py`):
- `Dojo(Theorem(LeanGitRepo(url, commit), file_path, full_name), timeout=...)` is a context
  manager; `__enter__` returns `(dojo, initial TacticState)` and raises `DojoInitError` when
  the theorem cannot be opened (its own init timeout included).
- `dojo.run_tac(state, tactic)` returns `TacticState(pp, id, message)`, `ProofFinished`,
  `LeanError(error)` or `ProofGivenUp()`, and raises `DojoCrashError` when the REPL process
  died (EOF, bad JSON, exit code; "OOM" for exit 137).
- A tactic timeout is no result: `run_tac` raises `DojoTacticTimeoutError` when the REPL has
  not answered within `timeout` seconds (pexpect's timeout), and sets `dojo.has_timedout`.
  Lean is then still busy with that tactic and its late answer would be read as the answer to
  the next request, so after a timeout we restart the Dojo before running anything else.

lean-dojo also raises exceptions that are not its own (read from dojo.py, trace.py, utils.py):
`AssertionError` (a missing Lean4Repl.lean, an error or "no goals" at start-up, a goal text
`TacticState` cannot parse), `json.JSONDecodeError` (start-up output that is not JSON),
`subprocess.CalledProcessError` (`lake build` while tracing) and `urllib.error.URLError` (the
GitHub API). They are mapped where they are raised: while opening, to `EnvInitError`; from a
tactic, to a recorded failure and a `TacticError` (the REPL answered, so it is still in step).

A restart loses every state id Lean handed out. Each of our states remembers its parent and
the tactic that made it, so after a restart a state is rebuilt by replaying its path.
`lean_dojo` is imported on first use: this module imports (and its tests run) without Lean.
"""
from __future__ import annotations

import json
import logging
import shutil
import subprocess
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol

from prover.env.base import (
    ENV_LEANDOJO,
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
from prover.env.text_check import contains_sorry, tactic_text_problem
from prover.env.verdict import SOURCE_LEANDOJO, Evidence, decide

log = logging.getLogger(__name__)

# What lean-dojo raises besides its own Dojo*Error classes (see the module docstring). OSError
# covers URLError and a missing `lake`/`git`; ValueError covers JSONDecodeError.
NON_DOJO_ERRORS: tuple[type[BaseException], ...] = (
    AssertionError, json.JSONDecodeError, subprocess.CalledProcessError, urllib.error.URLError,
    OSError, ValueError, RuntimeError)


def describe_error(e: BaseException) -> str:
    """One line naming the exception's type: an AssertionError often has no message."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def lean_toolchain_available(path: str | None = None, need_lean: bool = True) -> bool:
    """Whether Lean can run here: `lake` and `lean` on PATH (elan's proxies count), or an elan
    install whose bin folder has them. A pass@1 run must refuse to start without this. The REPL
    env needs `lake` only (lean-interact starts the REPL with `lake env`)."""
    if shutil.which("lake", path=path) and (not need_lean or shutil.which("lean", path=path)):
        return True
    elan = shutil.which("elan", path=path)
    if elan is None:
        return False
    bin_dir = Path(elan).resolve().parent
    return (bin_dir / "lake").exists() and (bin_dir / "lean").exists()


class TheoremRef(Protocol):
    """Where a theorem lives; `prover.data.theorem.Theorem` is one."""

    url: str
    commit: str
    file_path: str
    full_name: str


@dataclass
class LeanDojoConfig:
    # Seconds Lean may take per tactic (pexpect's timeout on the REPL once it is open). Apart
    # from the search's whole budget (search.timeout_s), which is checked before each tactic.
    timeout: int = 60
    # Seconds Lean may take to elaborate the file up to the theorem and hand out its first
    # state (Dojo's own `timeout` while opening). Tracing is not bounded by it: trace ahead.
    startup_timeout: int = 600
    # Dojo restarts allowed per failing call (a crash, then a restart, then a retry) before
    # the env gives up with EnvCrash.
    max_restarts: int = 1
    additional_imports: list[str] = field(default_factory=list)
    build_deps: bool = True


def _lean_dojo() -> Any:
    try:
        import lean_dojo
    except ImportError as e:  # pragma: no cover - lean-dojo is a declared dependency
        raise EnvInitError(f"lean_dojo is not installed: {e}") from e
    return lean_dojo


class _Restart(Exception):
    """A state could not be rebuilt after a restart (Lean answered differently)."""


class LeanDojoEnv(ProofEnv):
    """One theorem in Lean via LeanDojo. States are ours; Lean's are kept behind their ids."""

    name = ENV_LEANDOJO

    def __init__(self, theorem: TheoremRef, config: LeanDojoConfig | None = None) -> None:
        super().__init__()
        self.theorem = theorem
        self.config = config or LeanDojoConfig()
        self.restarts = 0
        self._live = Liveness(self.name)
        self._entry: Any = None
        self._dojo: Any = None
        self._needs_restart = False
        # Our state id -> its text, how it was made (parent id, tactic), and Lean's state in the
        # current Dojo process (dropped on restart, rebuilt on demand).
        self._texts: dict[int, str] = {}
        self._parents: dict[int, tuple[int, str]] = {}
        self._lean: dict[int, Any] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        self._texts.clear()
        self._parents.clear()
        self._lean.clear()
        self._live.dead = None
        for attempt in range(self.config.max_restarts + 1):
            try:
                init = self._start_dojo()
            except EnvInitError as e:
                self._record("init", e.message, None, recovered=False)
                raise
            except (_lean_dojo().DojoCrashError, _Restart) as e:
                self._record("crash", f"crash while opening: {e}", None,
                             recovered=attempt < self.config.max_restarts)
                continue
            self._texts[0] = init.pp
            self._lean[0] = init
            self._live.is_open = True
            return
        self._give_up(f"leandojo: Dojo for {self.theorem.full_name} crashed "
                      f"{self.config.max_restarts + 1} times while opening")

    def close(self) -> None:
        self._live.is_open = False
        self._stop_dojo()

    @property
    def initial_state(self) -> State:
        self._live.check()
        return State(self._texts[0], 0)

    def _make_entry(self) -> Any:
        if self._entry is None:
            ld = _lean_dojo()
            t = self.theorem
            try:
                # LeanGitRepo resolves the repo (GitHub or a clone) when constructed.
                repo = ld.LeanGitRepo(t.url, t.commit)
                self._entry = ld.Theorem(repo, Path(t.file_path), t.full_name)
            except Exception as e:  # a bad url, commit or path: this theorem cannot be opened
                raise EnvInitError(f"leandojo: cannot resolve {t.full_name} in {t.url}@{t.commit}: "
                                   f"{type(e).__name__}: {e}") from e
        return self._entry

    def _start_dojo(self) -> Any:
        """Start one Dojo process; returns Lean's initial state. Crashes propagate."""
        ld = _lean_dojo()
        cfg = self.config
        dojo = ld.Dojo(self._make_entry(), timeout=cfg.startup_timeout,
                       additional_imports=list(cfg.additional_imports), build_deps=cfg.build_deps)
        try:
            _, init = dojo.__enter__()
        except ld.DojoInitError as e:
            _exit_quietly(dojo)
            raise EnvInitError(f"leandojo: cannot open {self.theorem.full_name}: {e}") from e
        except ld.DojoCrashError:
            _exit_quietly(dojo)
            raise
        except NON_DOJO_ERRORS as e:  # this theorem cannot be opened; the run goes on
            _exit_quietly(dojo)
            raise EnvInitError(f"leandojo: cannot open {self.theorem.full_name}: "
                               f"{describe_error(e)}") from e
        except BaseException:
            _exit_quietly(dojo)  # a half-started REPL process must not outlive us
            raise
        if not isinstance(init, ld.TacticState):
            _exit_quietly(dojo)
            raise EnvInitError(f"leandojo: {self.theorem.full_name} opened on "
                               f"{type(init).__name__}, not a tactic state")
        # Dojo reads each answer with its pexpect process's default timeout, which it set to
        # the start-up limit: tactics get theirs from here on.
        dojo.proc.timeout = cfg.timeout
        self._dojo = dojo
        self._needs_restart = False
        return init

    def _stop_dojo(self) -> None:
        dojo, self._dojo = self._dojo, None
        if dojo is not None:
            _exit_quietly(dojo)

    def _restart(self) -> None:
        self._stop_dojo()
        self._lean.clear()
        self.restarts += 1
        try:
            init = self._start_dojo()
        except EnvInitError as e:  # counted like a crash: the caller's retry budget bounds it
            raise _Restart(str(e)) from e
        if normalize_ws(init.pp) != normalize_ws(self._texts[0]):
            raise _Restart("the restarted Dojo opened on a different initial state")
        self._lean[0] = init

    # -- tactics ---------------------------------------------------------------------------

    def run_tactic(self, state: State, tactic: str) -> TacticResult:
        self._live.check()
        if state.id not in self._texts:
            raise ValueError(f"state {state.id} was not made by this env")
        if contains_sorry(tactic):
            return GivenUp()  # Lean would answer ProofGivenUp; no need to ask it
        problem = tactic_text_problem([tactic])
        if problem is not None:  # the one text check: never sent to Lean
            return TacticError(problem)
        ld = _lean_dojo()
        for attempt in range(self.config.max_restarts + 1):
            try:
                if self._needs_restart or self._dojo is None:
                    self._restart()
                lean_state = self._lean_state(state.id)
                result = self._dojo.run_tac(lean_state, tactic)
            except ld.DojoTacticTimeoutError:
                self._needs_restart = True
                message = f"tactic exceeded {self.config.timeout}s"
                self._record("timeout", message, tactic)
                return Timeout(message)
            except (ld.DojoCrashError, _Restart) as e:
                self._needs_restart = True
                self._record("crash", str(e) or type(e).__name__, tactic,
                             recovered=attempt < self.config.max_restarts)
                continue
            except NON_DOJO_ERRORS as e:
                # Lean answered (the line was read) but lean-dojo could not take the answer,
                # e.g. a goal `TacticState` cannot parse: this tactic fails, the REPL is fine.
                message = f"lean-dojo raised {describe_error(e)}"
                self._record("error", message, tactic)
                return TacticError(message)
            return self._convert(result, state.id, tactic)
        self._give_up(f"leandojo: Dojo for {self.theorem.full_name} crashed "
                      f"{self.config.max_restarts + 1} times running {tactic!r}: "
                      f"{self.failures[-1].message}")

    def _convert(self, result: Any, parent: int, tactic: str) -> TacticResult:
        ld = _lean_dojo()
        if isinstance(result, ld.TacticState):
            sid = len(self._texts)
            self._texts[sid] = result.pp
            self._parents[sid] = (parent, tactic)
            self._lean[sid] = result
            return State(result.pp, sid)
        if isinstance(result, ld.ProofFinished):
            # Dojo's word: no goal left, no error and no sorry (its REPL refuses a proof term
            # that holds one); every tactic on the path passed the text check. Dojo's tactic
            # mode shows no axioms and runs no kernel replay: the verdict records that.
            evidence = Evidence(SOURCE_LEANDOJO, text_checked=True, errors=(), sorries_left=0)
            return ProofFinished(result.message or "", decide(evidence, self.theorem.full_name))
        if isinstance(result, ld.LeanError):
            return TacticError(result.error)
        if isinstance(result, ld.ProofGivenUp):
            return GivenUp()
        raise TypeError(f"unexpected lean_dojo result {type(result).__name__}")

    def _lean_state(self, sid: int) -> Any:
        """Lean's state for our state `sid` in the current process, replaying its path
        from the nearest state this process knows."""
        path: list[int] = []
        cur = sid
        while cur not in self._lean:
            path.append(cur)
            cur = self._parents[cur][0]
        ld = _lean_dojo()
        for node in reversed(path):
            parent, tactic = self._parents[node]
            try:
                result = self._dojo.run_tac(self._lean[parent], tactic)
            except ld.DojoTacticTimeoutError as e:
                raise _Restart(f"timed out rebuilding state {node} after a restart") from e
            except NON_DOJO_ERRORS as e:
                raise _Restart(f"rebuilding state {node} after a restart: {describe_error(e)}") from e
            if not (isinstance(result, ld.TacticState)
                    and normalize_ws(result.pp) == normalize_ws(self._texts[node])):
                raise _Restart(f"state {node} could not be rebuilt after a restart")
            self._lean[node] = result
        return self._lean[sid]

    # -- failures --------------------------------------------------------------------------

    def _record(self, kind: str, message: str, tactic: str | None, recovered: bool = True) -> None:
        log.warning("leandojo %s on %s: %s", kind, self.theorem.full_name, message)
        self.failures.append(EnvFailure(kind, message, tactic, recovered))

    def _give_up(self, message: str) -> NoReturn:
        self._live.dead = message
        self._live.is_open = False
        self._stop_dojo()
        raise EnvCrash(message)


def _exit_quietly(dojo: Any) -> None:
    """Leave a Dojo whose process may be dead or half-started (`__exit__` then finds no
    process or temp file); the env is closing or restarting anyway."""
    try:
        dojo.__exit__(None, None, None)
    except Exception as e:
        log.debug("leandojo: error while closing Dojo: %s", e)
