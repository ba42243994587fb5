"""ReplayEnv: a Lean simulator built from LeanDojo-format traced proofs.

THIS IS A SIMULATOR. It accepts only the tactics a traced proof recorded, from the state they
were recorded in, and answers with the recorded next state. It exists to test proof search,
batching and fault handling without a Lean toolchain. Nothing it reports is a theorem-proving
result: its results carry env "replay", and its numbers are never pass@1.

Rules:
- A tactic succeeds only if, whitespace-normalized, it equals a tactic recorded from a
  `state_before` that equals the current state (also whitespace-normalized). It yields that
  record's `state_after`; "no goals" is ProofFinished. Every tactic recorded from a state is
  accepted there (a theorem can record several from the same state).
- With `focus_goals`, a record also applies when its `state_before` is the first goals of the
  current state (the remaining goals are kept after its `state_after`), as Lean runs a tactic on
  the main goal. Traced proofs need this for tactics recorded inside `·` focusing blocks, whose
  `state_before` shows the focused goal only. Off by default: the plain rule is the contract.
- A tactic containing `sorry` or `admit` is GivenUp; anything else is a TacticError.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from prover.data.state import NO_GOALS
from prover.data.theorem import Theorem, TracedTactic
from prover.env.base import (
    ENV_REPLAY,
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
from prover.env.verdict import SOURCE_REPLAY, Evidence, decide


@dataclass
class ReplayConfig:
    # Seconds slept per tactic, to make the simulator cost time like Lean does (scheduling tests).
    delay_s: float = 0.0
    # Apply records to the first goals of a multi-goal state (see the module docstring).
    focus_goals: bool = False
    # Fault injection: envs for these theorems (full names) crash after `crash_after` tactics
    # (0: when opened), and stay dead.
    crash_theorems: list[str] = field(default_factory=list)
    crash_after: int = 0
    # Fault injection: these tactics (whitespace-normalized) time out.
    timeout_tactics: list[str] = field(default_factory=list)


def split_goals(text: str) -> list[str]:
    """The goals of a pretty-printed state, as Lean separates them (a blank line)."""
    if normalize_ws(text) == NO_GOALS:
        return []
    return [g for g in text.split("\n\n") if g.strip()]


def _norm_goals(text: str) -> tuple[str, ...]:
    return tuple(normalize_ws(g) for g in split_goals(text))


@dataclass(frozen=True)
class _Record:
    tactic: str  # as traced
    state_after: str  # as traced


class ReplayTable:
    """Traced tactics indexed by normalized state_before, then by normalized tactic."""

    def __init__(self, tactics: tuple[TracedTactic, ...] | list[TracedTactic]) -> None:
        self.by_state: dict[str, dict[str, _Record]] = {}
        for t in tactics:
            per_state = self.by_state.setdefault(normalize_ws(t.state_before), {})
            # A state can repeat with the same tactic; the first record is the one replayed.
            per_state.setdefault(normalize_ws(t.tactic), _Record(t.tactic, t.state_after))

    def lookup(self, state_text: str, tactic: str) -> _Record | None:
        return self.by_state.get(normalize_ws(state_text), {}).get(normalize_ws(tactic))


def pick_initial_state(tactics: tuple[TracedTactic, ...] | list[TracedTactic]) -> str:
    """The theorem's own initial state among the recorded ones.

    Traces also hold tactics of nested `by` blocks (inside the statement or a term), whose
    states no other tactic leads to either. Of these root states, take the one from which the
    most records are reachable goal by goal (the main proof), the first in trace order on ties.
    """
    if not tactics:
        raise ValueError("no traced tactics")
    before = [_norm_goals(t.state_before) for t in tactics]
    after = [_norm_goals(t.state_after) for t in tactics]
    produced = {g for goals in after for g in goals}
    roots: list[int] = []
    seen: set[tuple[str, ...]] = set()
    for i, goals in enumerate(before):
        if goals and goals[0] not in produced and goals not in seen:
            seen.add(goals)
            roots.append(i)
    if not roots:
        return tactics[0].state_before

    def reach(i: int) -> int:
        goals, used = set(before[i]), set()
        changed = True
        while changed:
            changed = False
            for j, b in enumerate(before):
                if j not in used and b and b[0] in goals:
                    used.add(j)
                    goals.update(after[j])
                    changed = True
        return len(used)

    best = max(roots, key=lambda i: (reach(i), -i))
    return tactics[best].state_before


class ReplayEnv(ProofEnv):
    """Simulated environment for one traced theorem (see the module docstring)."""

    name = ENV_REPLAY

    def __init__(self, theorem: Theorem, config: ReplayConfig | None = None,
                 initial_state: str | None = None) -> None:
        super().__init__()
        self.theorem = theorem
        self.config = config or ReplayConfig()
        self.table = ReplayTable(theorem.traced_tactics)
        self._initial_text = initial_state
        self._ids: dict[str, int] = {}
        self._initial: State | None = None
        self._live = Liveness(self.name)
        self._tactics_run = 0
        self._timeouts = {normalize_ws(t) for t in self.config.timeout_tactics}

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        if not self.theorem.traced_tactics and self._initial_text is None:
            raise EnvInitError(f"replay: {self.theorem.full_name} has no traced tactics")
        self._tactics_run = 0
        self._maybe_crash(at_open=True)
        text = self._initial_text or pick_initial_state(self.theorem.traced_tactics)
        self._initial = self._state(text)
        self._live.is_open = True

    def close(self) -> None:
        self._live.is_open = False

    @property
    def initial_state(self) -> State:
        self._live.check()
        assert self._initial is not None
        return self._initial

    # -- tactics ---------------------------------------------------------------------------

    def run_tactic(self, state: State, tactic: str) -> TacticResult:
        self._live.check()
        self._tactics_run += 1
        self._maybe_crash(at_open=False)
        if self.config.delay_s > 0:
            time.sleep(self.config.delay_s)
        if contains_sorry(tactic):
            return GivenUp()
        problem = tactic_text_problem([tactic])
        if problem is not None:
            return TacticError(problem)
        if normalize_ws(tactic) in self._timeouts:
            return Timeout(f"replay: simulated timeout of {tactic!r}")
        goals = self._apply(state.text, tactic)
        if goals is None:
            known = len(self.recorded_tactics(state))
            return TacticError(f"replay: no recorded tactic {normalize_ws(tactic)!r} for this "
                               f"state ({known} recorded for it)")
        if not goals:  # a recorded proof replayed: the simulator's word, never Lean's
            return ProofFinished("replay", decide(Evidence(SOURCE_REPLAY, text_checked=True)))
        return self._state("\n\n".join(goals))

    def recorded_tactics(self, state: State) -> list[str]:
        """The traced tactics this env accepts on `state`, as traced (an oracle for tests)."""
        keys = [normalize_ws(state.text)]
        if self.config.focus_goals:
            goals = split_goals(state.text)
            keys += [normalize_ws("\n\n".join(goals[:k])) for k in range(len(goals) - 1, 0, -1)]
        out: list[str] = []
        for key in keys:
            out += [r.tactic for r in self.table.by_state.get(key, {}).values() if r.tactic not in out]
        return out

    def _apply(self, text: str, tactic: str) -> list[str] | None:
        """The goals after `tactic`, or None when no record applies."""
        rec = self.table.lookup(text, tactic)
        if rec is not None:
            return split_goals(rec.state_after)
        if not self.config.focus_goals:
            return None
        goals = split_goals(text)
        # Longest prefix first: a record made on more of the goals is the more specific one.
        for k in range(len(goals) - 1, 0, -1):
            rec = self.table.lookup("\n\n".join(goals[:k]), tactic)
            if rec is not None:
                return split_goals(rec.state_after) + goals[k:]
        return None

    def _state(self, text: str) -> State:
        # One id per distinct (normalized) state, so revisiting a state is visible to search.
        key = normalize_ws(text)
        if key not in self._ids:
            self._ids[key] = len(self._ids)
        return State(text, self._ids[key])

    def _maybe_crash(self, at_open: bool) -> None:
        cfg = self.config
        if self.theorem.full_name not in cfg.crash_theorems:
            return
        due = cfg.crash_after <= 0 if at_open else self._tactics_run > cfg.crash_after
        if not due:
            return
        message = (f"replay: simulated crash of {self.theorem.full_name} after "
                   f"{0 if at_open else cfg.crash_after} tactics")
        self.failures.append(EnvFailure("crash", message, recovered=False))
        self._live.dead = message
        raise EnvCrash(message)
