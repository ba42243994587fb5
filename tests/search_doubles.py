"""TEST DOUBLES for proof search: stand-ins for the tactic generator, never used by the product.

`OracleTactics` cheats on purpose: it knows the traced proofs and proposes, for a state, the
tactics recorded from it, after some distractors that fail. With ReplayEnv (which accepts only
recorded tactics) it lets tests check what search does with a generator that *can* prove a
theorem: that proofs are found, replay, and respect priorities, dedupe and budgets. Numbers
obtained with it measure nothing about a model.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from prover.data.theorem import Theorem
from prover.search.replay_benchmark import RecordedTactics
from prover.search.sources import Suggested

# Tactics no traced proof records: Replay answers them with errors (or GivenUp, for sorry).
# Their log-probabilities beat the recorded ones, so they are tried first.
DISTRACTORS = (("simp [oracle_distractor]", -0.2), ("sorry", -0.3), ("exact oracle_distractor", -0.4),
               ("oracle_distractor", -0.6))


class OracleTactics(RecordedTactics):
    """TEST DOUBLE TacticSource: recorded tactics of a state (plus distractors), best first.
    The recorded ones are found as the replay ceiling finds them (RecordedTactics)."""

    name = "oracle-test-double"

    def __init__(self, theorems: Sequence[Theorem], focus_goals: bool = False,
                 distractors: Sequence[tuple[str, float]] = DISTRACTORS,
                 recorded_logprob: float = -1.0, on_suggest: Callable[[str], None] | None = None) -> None:
        super().__init__(theorems, focus_goals)
        self.distractors = list(distractors)
        self.recorded_logprob = recorded_logprob
        self.on_suggest = on_suggest
        self.calls = 0
        self.batch_sizes: list[int] = []

    def suggest(self, requests):
        self.calls += 1
        self.batch_sizes.append(len(requests))
        out = []
        for state, _premises in requests:
            if self.on_suggest is not None:
                self.on_suggest(state)
            recorded = [Suggested(t, self.recorded_logprob - 0.01 * i)
                        for i, t in enumerate(self.recorded(state))]
            out.append([Suggested(t, lp) for t, lp in self.distractors] + recorded)
        return out


class OracleSpec:
    """TEST DOUBLE generator spec for the Ray actors: builds an OracleTactics in the actor."""

    def __init__(self, theorems: Sequence[Theorem], focus_goals: bool = False) -> None:
        self.theorems = list(theorems)
        self.focus_goals = focus_goals

    def build(self) -> OracleTactics:
        return OracleTactics(self.theorems, self.focus_goals)

    def describe(self) -> str:
        return "oracle-test-double"


class FakeClock:
    """A clock tests advance by hand, so time budgets are checked exactly."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TimedPremises:
    """A premise source that takes `cost` fake seconds and returns no premises."""

    def __init__(self, clock: FakeClock, cost: float) -> None:
        self.clock, self.cost = clock, cost
        self.contexts: list = []

    def retrieve(self, states, contexts):
        self.clock.now += self.cost
        self.contexts += list(contexts)
        return [[] for _ in states]


class TimedTactics:
    """Wraps a tactic source; each call takes `cost` fake seconds."""

    def __init__(self, inner, clock: FakeClock, cost: float) -> None:
        self.inner, self.clock, self.cost = inner, clock, cost

    def suggest(self, requests):
        self.clock.now += self.cost
        return self.inner.suggest(requests)


def save_untrained_generator(path):
    """A real tiny generator straight from initialization (not a double: plumbing tests only
    need a model that loads and answers, not one that proves)."""
    from generator.model import TacticGenerator
    from generator.settings import InputConfig, ModelConfig
    TacticGenerator.create(ModelConfig(d_model=64, d_ff=128, num_layers=1, num_decoder_layers=1,
                                       num_heads=2, d_kv=32, dropout=0.0),
                           InputConfig(max_bytes=256, max_target_bytes=32)).save_pretrained(path)
    return path


class ScriptedTactics:
    """TEST DOUBLE TacticSource: for each state text, the tactics a test chose, best first (for
    envs that answer only what a transcript recorded, such as the fake Lean REPL)."""

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script

    def suggest(self, requests):
        return [[Suggested(t, -1.0 - i) for i, t in enumerate(self.script.get(state, []))]
                for state, _ in requests]


class ScriptedSpec:
    """TEST DOUBLE generator spec for the Ray actors: builds a ScriptedTactics in the actor."""

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script

    def build(self) -> ScriptedTactics:
        return ScriptedTactics(self.script)

    def describe(self) -> str:
        return "scripted-test-double"


class RecordingSpec(ScriptedSpec):
    """TEST DOUBLE generator spec: a ScriptedTactics that also appends, for every request, the
    state and the names of the premises it was given to `log` (one JSON line each), so a test
    sees what the retriever ranked in the actors."""

    def __init__(self, script: dict[str, list[str]], log: str) -> None:
        super().__init__(script)
        self.log = log

    def build(self) -> ScriptedTactics:
        inner, log = ScriptedTactics(self.script), self.log

        class Recording:
            def suggest(self, requests):
                import json
                with open(log, "a") as f:
                    for state, premises in requests:
                        f.write(json.dumps({"state": state, "premises": [p.full_name for p in premises]}) + "\n")
                return inner.suggest(requests)
        return Recording()
