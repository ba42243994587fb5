"""Best-first proof search, as ReProver does it.

Every open node is a proof state; its priority is the cumulative log-probability of the
tactics on the path from the root. The best open node is expanded: premises are retrieved for
its state, the generator proposes its tactics (`generator.num_tactics` of them, best first:
the one setting, read by the generator), and each is run in the environment. A tactic that closes the proof ends the search; one that yields a state not seen
before in this search adds an open node; a state seen before (compared whitespace-normalized)
adds nothing, so the tree stays a tree and no state is expanded twice.

Budgets are checked before each expansion, as ReProver does: a search stops when it has
expanded `max_expansions` nodes or spent `timeout_s` seconds since its environment opened. The
time budget is also checked before each tactic: one expansion of 64 tactics, each allowed the
env's own per-tactic timeout, must not run 64 times that. A tactic begun within budget runs to
its end, so a proof found at the budget's edge is a proof (and a search can overrun its budget
by up to one tactic's timeout). Time is split into retrieval, generation and
environment; whatever is left (bookkeeping) is the rest.

Only environment failures end a search as an error: an env's own exception that is not an
EnvCrash (an adapter that missed one of its library's exceptions) is one too, so one theorem
never ends a run. A failing premise or tactic source (a dead
actor, say) raises: the theorem did nothing wrong, and the caller may retry it elsewhere.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from prover.env.base import (EnvCrash, GivenUp, ProofEnv, ProofFinished, State, TacticError,
                             Timeout, normalize_ws)
from prover.search.sources import ModelCallTimeout, PremiseSource, TacticSource

log = logging.getLogger(__name__)

PROVED, FAILED, ERROR = "proved", "failed", "error"


@dataclass
class SearchConfig:
    max_expansions: int | None = None  # node budget (None: time only)
    # Time budget per theorem, counted from when the environment is open: start-up (tracing,
    # elaborating the file) has its own limit in the env's settings.
    timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.max_expansions is not None and self.max_expansions <= 0:
            raise ValueError(f"search.max_expansions must be positive or null, not {self.max_expansions}")
        if self.timeout_s <= 0:
            raise ValueError(f"search.timeout_s must be positive, not {self.timeout_s}")


@dataclass
class SearchTimes:
    total_s: float = 0.0
    retrieval_s: float = 0.0
    generation_s: float = 0.0
    environment_s: float = 0.0  # opening the env and running tactics

    @property
    def other_s(self) -> float:
        return max(0.0, self.total_s - self.retrieval_s - self.generation_s - self.environment_s)


@dataclass
class TreeStats:
    nodes: int = 0  # distinct states reached, the root included
    open: int = 0  # nodes never expanded when the search stopped
    max_depth: int = 0  # deepest node (the root is 0)
    tactics_tried: int = 0
    # What the tried tactics did: new_state, duplicate, error, timeout, given_up, proof.
    outcomes: dict[str, int] = field(default_factory=dict)
    proof_depth: int | None = None


@dataclass
class SearchResult:
    status: str  # proved, failed or error
    env: str  # "leandojo" or "replay": replay proofs are simulator results, never pass@1
    proof: list[str] | None = None  # tactics from the initial state, when proved
    stop_reason: str = ""  # proved, queue_empty, max_expansions, timeout, env_crash, env_start
    expansions: int = 0
    env_started: bool = True  # False: the environment failed to open (counted as a failure)
    error: str | None = None
    times: SearchTimes = field(default_factory=SearchTimes)
    tree: TreeStats = field(default_factory=TreeStats)
    env_failures: list[dict] = field(default_factory=list)  # crashes/timeouts the env reported
    check: dict | None = None  # the proof's verdict, where the env checks proofs (ProofFinished.check)

    def to_json(self) -> dict:
        out = asdict(self)
        out["times"] = {k: round(v, 4) for k, v in out["times"].items()}
        out["times"]["other_s"] = round(self.times.other_s, 4)
        return out


@dataclass(eq=False)
class _Node:
    state: State
    logprob: float  # cumulative, root = 0
    depth: int
    parent: _Node | None = None
    tactic: str | None = None  # the tactic that led here from the parent

    def path(self) -> list[str]:
        out, node = [], self
        while node.parent is not None:
            out.append(node.tactic)
            node = node.parent
        return out[::-1]


class _Stop(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def best_first_search(env: ProofEnv, premises: PremiseSource, tactics: TacticSource,
                      config: SearchConfig | None = None, context: Any = None,
                      clock: Callable[[], float] = time.monotonic) -> SearchResult:
    """Open `env`, search for a proof of its theorem, close it. `context` (a
    `retriever.base.TheoremContext` or None) tells the retriever which premises are accessible."""
    cfg = config or SearchConfig()
    t0 = clock()
    result = SearchResult(status=FAILED, env=env.name)
    times = result.times
    try:
        try:
            _env_call(env.open)
        except EnvCrash as e:  # EnvInitError included
            result.status, result.env_started = ERROR, False
            result.stop_reason, result.error = "env_start", e.message
            return result
        finally:
            times.environment_s += clock() - t0
        try:
            # The budget starts now: an env that took long to open leaves the search its time.
            _search(env, premises, tactics, cfg, context, clock, clock(), result)
        except EnvCrash as e:
            result.status, result.stop_reason, result.error = ERROR, "env_crash", e.message
    finally:
        try:
            env.close()
        finally:
            times.total_s = clock() - t0
            result.env_failures = [asdict(f) for f in env.failures]
    return result


def _env_call(call: Callable[..., Any], *args: Any) -> Any:
    """Call the env; any exception it lets out becomes an EnvCrash, recorded for this theorem."""
    try:
        return call(*args)
    except EnvCrash:
        raise
    except Exception as e:
        text = " ".join(str(e).split())
        raise EnvCrash(f"{type(e).__name__}: {text}" if text else type(e).__name__) from e


def _search(env: ProofEnv, premises: PremiseSource, tactics: TacticSource, cfg: SearchConfig,
            context: Any, clock: Callable[[], float], t0: float, result: SearchResult) -> None:
    times, tree = result.times, result.tree
    outcomes: Counter[str] = Counter()
    root = _Node(env.initial_state, 0.0, 0)
    seen = {normalize_ws(root.state.text)}
    order = itertools.count()  # equal priorities: first come, first expanded
    queue: list[tuple[float, int, _Node]] = [(0.0, next(order), root)]

    try:
        while True:
            if not queue:
                raise _Stop("queue_empty")
            if cfg.max_expansions is not None and result.expansions >= cfg.max_expansions:
                raise _Stop("max_expansions")
            if clock() - t0 >= cfg.timeout_s:
                raise _Stop("timeout")
            _, _, node = heapq.heappop(queue)
            result.expansions += 1

            t = clock()
            try:  # the time limit inside a long model call: the source raises when it is spent
                found = premises.retrieve([node.state.text], [context])[0]
                times.retrieval_s += clock() - t
                t = clock()
                suggested = tactics.suggest([(node.state.text, found)])[0]
                times.generation_s += clock() - t
            except ModelCallTimeout:
                raise _Stop("timeout") from None

            tried: set[str] = set()
            for s in suggested:
                key = normalize_ws(s.tactic)
                if not key or key in tried:
                    continue
                if clock() - t0 >= cfg.timeout_s:
                    raise _Stop("timeout")
                tried.add(key)
                t = clock()
                try:
                    outcome = _env_call(env.run_tactic, node.state, s.tactic)
                finally:
                    times.environment_s += clock() - t
                    tree.tactics_tried += 1
                if isinstance(outcome, ProofFinished):
                    outcomes["proof"] += 1
                    result.check = outcome.check
                    result.proof = node.path() + [s.tactic]
                    tree.proof_depth = node.depth + 1
                    raise _Stop(PROVED)
                if isinstance(outcome, State):
                    skey = normalize_ws(outcome.text)
                    if skey in seen:
                        outcomes["duplicate"] += 1
                        continue
                    seen.add(skey)
                    outcomes["new_state"] += 1
                    child = _Node(outcome, node.logprob + s.logprob, node.depth + 1, node, s.tactic)
                    tree.max_depth = max(tree.max_depth, child.depth)
                    heapq.heappush(queue, (-child.logprob, next(order), child))
                elif isinstance(outcome, TacticError):
                    outcomes["error"] += 1
                elif isinstance(outcome, Timeout):
                    outcomes["timeout"] += 1
                elif isinstance(outcome, GivenUp):
                    outcomes["given_up"] += 1
            log.debug("expanded node at depth %d (log-prob %.2f): %d tactics, queue %d",
                      node.depth, node.logprob, len(tried), len(queue))
    except _Stop as stop:
        result.stop_reason = stop.reason
        if stop.reason == PROVED:
            result.status = PROVED
    finally:
        tree.nodes = len(seen)
        tree.open = len(queue)
        tree.outcomes = dict(sorted(outcomes.items()))
