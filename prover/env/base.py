"""What a proof environment returns, and the interface every environment implements.

A `ProofEnv` is opened for one theorem (`with env:`), hands out its `initial_state`, and runs
one tactic on one open state at a time. Results are plain frozen dataclasses so they can be
pickled across Ray workers and written to JSON. Every env has a `name` ("leandojo",
"repl" or "replay") that result files must carry: a proof found by the replay simulator says nothing
about Lean, so it can never be counted as pass@1.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Union

from prover.env.verdict import Verdict

ENV_LEANDOJO = "leandojo"
ENV_REPLAY = "replay"
ENV_REPL = "repl"  # the Lean REPL through lean-interact: Lean itself, like leandojo


@dataclass(frozen=True)
class State:
    """An open proof state: Lean's pretty-printed goals, and an id unique within its env."""

    text: str
    id: int


@dataclass(frozen=True)
class ProofFinished:
    """The tactic closed the last goal, and the one verdict (`prover.env.verdict.decide`) on
    the whole proof is `proved`: an env returns this only with such a verdict."""

    message: str
    verdict: Verdict

    def __post_init__(self) -> None:
        if not isinstance(self.verdict, Verdict) or not self.verdict.ok:
            raise ValueError(f"a finished proof needs a verdict of proved, not {self.verdict!r}")

    @property
    def check(self) -> dict:
        """The verdict as JSON, as result files carry it."""
        return self.verdict.to_json()


@dataclass(frozen=True)
class TacticError:
    """Lean (or the simulator) rejected the tactic; the state it ran on is still usable."""

    message: str


@dataclass(frozen=True)
class Timeout:
    """The tactic ran past the per-tactic limit."""

    message: str


@dataclass(frozen=True)
class GivenUp:
    """The tactic contains `sorry` or `admit`: it would 'prove' anything, so it never counts."""


TacticResult = Union[State, ProofFinished, TacticError, Timeout, GivenUp]


class EnvCrash(RuntimeError):
    """The environment died and could not be brought back; the theorem's attempt is over."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EnvInitError(EnvCrash):
    """The environment could not be opened for this theorem (not found, unsupported, ...)."""


@dataclass(frozen=True)
class EnvFailure:
    """A failure the env survived (or died of), kept so result files can report it."""

    kind: str  # "crash", "timeout", "init" or "error" (lean-dojo raised on a tactic's answer)
    message: str
    tactic: str | None = None
    recovered: bool = True


def normalize_ws(text: str) -> str:
    """Collapse runs of whitespace to one space and strip: the form tactics and states are
    compared in, so a generator's spacing or a re-indented state still matches."""
    return " ".join(text.split())


class ProofEnv(ABC):
    """One theorem's proof environment, used as a context manager.

    >>> with env:
    ...     result = env.run_tactic(env.initial_state, "simp")
    """

    name: ClassVar[str]

    def __init__(self) -> None:
        self.failures: list[EnvFailure] = []

    def __enter__(self) -> ProofEnv:
        self.open()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    @abstractmethod
    def open(self) -> None:
        """Start the environment; raises EnvInitError or EnvCrash."""

    @abstractmethod
    def close(self) -> None:
        """Release the environment; safe to call twice or after a crash."""

    @property
    @abstractmethod
    def initial_state(self) -> State:
        """The theorem's goal before any tactic."""

    @abstractmethod
    def run_tactic(self, state: State, tactic: str) -> TacticResult:
        """Run `tactic` on `state`. Raises EnvCrash when the env is dead for good."""


@dataclass
class Liveness:
    """Whether an env is usable, so a call on a closed or dead env fails with a clear error."""

    env_name: str
    is_open: bool = False
    dead: str | None = None  # the crash message, once the env is dead for good

    def check(self) -> None:
        if self.dead is not None:
            raise EnvCrash(self.dead)
        if not self.is_open:
            raise RuntimeError(f"{self.env_name} env is not open: use it as `with env:`")
