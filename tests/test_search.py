"""Best-first search in process: ReplayEnv, and the oracle TEST DOUBLE in place of a generator."""
from __future__ import annotations

import pytest

from prover.data.theorem import load_theorems, parse_theorem
from prover.env.base import ProofFinished, State
from prover.env.replay import ReplayConfig, ReplayEnv
from prover.search.best_first import SearchConfig, best_first_search
from generator.settings import GenerateConfig
from prover.search.sources import NoPremises, Suggested
from retriever.base import TheoremContext
from tests.conftest import tactic, theorem_record
from tests.search_doubles import FakeClock, OracleTactics, TimedPremises, TimedTactics

# Sample theorems whose traced main proof replays without focus_goals, and the two that need
# it (their proofs take goals one at a time inside `·` blocks); see tests/test_env_replay.py.
PLAIN = {"CategoryTheory.Equivalence.invFunIdAssoc_hom_app", "ENNReal.le_rpow_one_div_iff",
         "Combinatorics.Line.apply_of_ne_none", "Batteries.BinomialHeap.Imp.Heap.WF.tail?",
         "Ideal.span_singleton_eq_span_singleton", "IsGroupHom.inv_ker_one'", "Convex.thickening",
         "SetTheory.PGame.zero_lf_inv'", "NNReal.le_inv_iff_mul_le",
         "MeasureTheory.integrable_of_intervalIntegral_norm_bounded"}
FOCUSED = {"CancelDenoms.cancel_factors_lt", "MeasureTheory.OuterMeasure.comap_ofFunction"}


@pytest.fixture(scope="module")
def sample(leandojo_sample):
    return load_theorems(leandojo_sample)


def _replays(thm, proof, config=None) -> bool:
    """Whether `proof` closes the theorem when run step by step in a fresh env."""
    with ReplayEnv(thm, config) as env:
        state = env.initial_state
        for i, tac in enumerate(proof):
            out = env.run_tactic(state, tac)
            if isinstance(out, ProofFinished):
                return i == len(proof) - 1
            if not isinstance(out, State):
                return False
            state = out
    return False


@pytest.mark.parametrize("focus", [False, True])
def test_oracle_proves_the_sample_theorems(sample, focus):
    cfg = ReplayConfig(focus_goals=focus)
    oracle = OracleTactics(sample, focus_goals=focus)
    results = {t.full_name: best_first_search(ReplayEnv(t, cfg), NoPremises(), oracle,
                                              SearchConfig(timeout_s=60))
               for t in sample}
    proved = {n for n, r in results.items() if r.status == "proved"}
    assert proved == (PLAIN | FOCUSED if focus else PLAIN)
    by_name = {t.full_name: t for t in sample}
    for name in proved:
        r = results[name]
        assert r.env == "replay" and r.stop_reason == "proved" and r.error is None
        assert _replays(by_name[name], r.proof, cfg), name
        assert r.tree.proof_depth == len(r.proof)
        assert r.tree.outcomes["proof"] == 1
        # Every distractor goes first and fails: three are errors, sorry gives up.
        assert r.tree.outcomes["given_up"] == r.expansions
        assert r.tree.outcomes["error"] >= 3 * r.expansions
    for name in set(results) - proved:
        r = results[name]
        if by_name[name].traced_tactics:
            assert (r.status, r.stop_reason, r.env_started) == ("failed", "queue_empty", True)
            assert r.proof is None and r.tree.open == 0
        else:  # no traced tactics: the replay env cannot open (an env-start failure)
            assert (r.status, r.stop_reason, r.env_started) == ("error", "env_start", False)
            assert "has no traced tactics" in r.error and r.expansions == 0
    assert sum(not r.env_started for r in results.values()) == 8


# A hand-made theorem whose tactic log-probabilities make the expansion order checkable:
#   A --to_b (-2.0)--> B --to_c (-0.05)--> C --done--> no goals
#   A --to_d (-0.5)--> D --to_e (-1.6)--> E (dead end)
#   A --to_b_again--> B (a duplicate), B --back--> A (a duplicate of the root)
SCRIPT = {
    "⊢ A": [("to_b", -2.0), ("to_d", -0.5), ("to_b_again", -3.0)],
    "⊢ D": [("to_e", -1.6), ("nonsense", -0.01)],
    "⊢ B": [("back", -0.01), ("to_c", -0.05)],
    "⊢ C": [("done", -0.1)],
    "⊢ E": [],
}
TRACE = [tactic("to_b", before="⊢ A", after="⊢ B"), tactic("to_b_again", before="⊢ A", after="⊢ B"),
         tactic("to_d", before="⊢ A", after="⊢ D"), tactic("to_e", before="⊢ D", after="⊢ E"),
         tactic("back", before="⊢ B", after="⊢ A"), tactic("to_c", before="⊢ B", after="⊢ C"),
         tactic("done", before="⊢ C", after="no goals")]


class ScriptedTactics:
    """Test double: fixed suggestions per state; remembers which states were expanded."""

    def __init__(self, script=SCRIPT):
        self.script = script
        self.expanded: list[str] = []

    def suggest(self, requests):
        out = []
        for state, _ in requests:
            self.expanded.append(state)
            out.append([Suggested(t, lp) for t, lp in self.script[state]])
        return out


@pytest.fixture
def abcde():
    return parse_theorem(theorem_record("T.abcde", "T.lean", TRACE, start=(3, 1)), "mem", 0, None)


def test_priority_is_cumulative_logprob_and_states_are_deduped(abcde):
    tactics = ScriptedTactics()
    r = best_first_search(ReplayEnv(abcde), NoPremises(), tactics, SearchConfig(timeout_s=60))
    # D (-0.5) before B (-2.0); then B before E (-2.1 cumulative, though its own step is -1.6);
    # C (-2.05) before E.
    assert tactics.expanded == ["⊢ A", "⊢ D", "⊢ B", "⊢ C"]
    assert r.status == "proved" and r.proof == ["to_b", "to_c", "done"]
    assert r.expansions == 4
    assert r.tree.outcomes == {"duplicate": 2, "error": 1, "new_state": 4, "proof": 1}
    assert (r.tree.nodes, r.tree.open, r.tree.max_depth, r.tree.proof_depth) == (5, 1, 2, 3)
    assert r.tree.tactics_tried == 8


def test_node_budget_edge(abcde):
    r = best_first_search(ReplayEnv(abcde), NoPremises(), ScriptedTactics(), SearchConfig(max_expansions=4))
    assert r.status == "proved" and r.expansions == 4  # found in the last allowed expansion
    r = best_first_search(ReplayEnv(abcde), NoPremises(), ScriptedTactics(), SearchConfig(max_expansions=3))
    assert (r.status, r.stop_reason, r.expansions, r.proof) == ("failed", "max_expansions", 3, None)
    assert r.tree.open == 2  # C and E were reached, never expanded


def test_time_budget_edge_and_time_split(abcde):
    def run(timeout):
        clock = FakeClock()
        premises = TimedPremises(clock, 1.0)
        ctx = TheoremContext("T.lean", (3, 1))
        r = best_first_search(ReplayEnv(abcde), premises, TimedTactics(ScriptedTactics(), clock, 9.0),
                              SearchConfig(timeout_s=timeout), context=ctx, clock=clock)
        assert set(premises.contexts) == {ctx}
        return r
    # Expansions start at 0, 10, 20 and 30 (fake seconds): the fourth finds the proof at 40.
    r = run(41.0)
    assert r.status == "proved" and r.expansions == 4
    assert (r.times.retrieval_s, r.times.generation_s, r.times.total_s) == (4.0, 36.0, 40.0)
    assert r.times.environment_s == 0.0 and r.times.other_s == 0.0
    # The fourth expansion began within budget, but its tactics would start at 40 s > 35 s.
    r = run(35.0)
    assert (r.status, r.stop_reason, r.expansions, r.tree.tactics_tried) == ("failed", "timeout", 4, 7)
    r = run(30.0)
    assert (r.status, r.stop_reason, r.expansions) == ("failed", "timeout", 3)
    assert r.times.total_s == 30.0


def test_each_expansion_tries_what_the_source_suggests(abcde):
    # The count is the source's (a generator's num_tactics): here only its best tactic per state.
    best = ScriptedTactics({state: suggested[:1] for state, suggested in SCRIPT.items()})
    r = best_first_search(ReplayEnv(abcde), NoPremises(), best, SearchConfig())
    # Only the best tactic of each state: A -> D (to_d), D -> nonsense (error): queue empty.
    assert (r.status, r.stop_reason, r.expansions, r.tree.tactics_tried) == ("failed", "queue_empty", 2, 2)


def test_env_crash_mid_search_is_an_error_with_its_message(sample):
    name = "ENNReal.le_rpow_one_div_iff"
    thm = next(t for t in sample if t.full_name == name)
    cfg = ReplayConfig(crash_theorems=[name], crash_after=6)
    r = best_first_search(ReplayEnv(thm, cfg), NoPremises(), OracleTactics(sample), SearchConfig())
    assert (r.status, r.stop_reason, r.env_started) == ("error", "env_crash", True)
    assert r.error == f"replay: simulated crash of {name} after 6 tactics"
    assert r.env_failures == [{"kind": "crash", "message": r.error, "tactic": None, "recovered": False}]
    assert r.expansions == 2 and r.tree.tactics_tried == 7


def test_a_failing_tactic_source_raises(abcde):
    class Dead:
        def suggest(self, requests):
            raise ConnectionError("generator actor died")
    env = ReplayEnv(abcde)
    with pytest.raises(ConnectionError):
        best_first_search(env, NoPremises(), Dead(), SearchConfig())
    assert not env._live.is_open  # closed on the way out


def test_config_is_checked():
    with pytest.raises(ValueError, match="num_tactics"):
        GenerateConfig(num_tactics=0)  # tactics per expansion: the generator's one setting
    with pytest.raises(ValueError, match="max_expansions"):
        SearchConfig(max_expansions=0)
    with pytest.raises(ValueError, match="timeout_s"):
        SearchConfig(timeout_s=0)


def test_search_clock_starts_after_the_env_is_open(abcde):
    """An env that takes long to open (LeanDojo tracing or elaborating the file) must not eat
    the search budget: start-up has its own limit, in the env (issue 16, defect 3)."""
    clock = FakeClock()

    class SlowToOpen(ReplayEnv):
        def open(self):
            clock.now += 1000.0  # start-up far beyond the search budget
            super().open()

    r = best_first_search(SlowToOpen(abcde), NoPremises(), TimedTactics(ScriptedTactics(), clock, 9.0),
                          SearchConfig(timeout_s=41.0), clock=clock)
    assert (r.status, r.expansions) == ("proved", 4)  # the same search as with an instant env
    assert (r.times.environment_s, r.times.generation_s, r.times.total_s) == (1000.0, 36.0, 1036.0)


def test_an_expansion_stops_trying_tactics_when_the_budget_is_spent(abcde):
    """Each tactic may take up to the env's per-tactic timeout; the search budget is separate and
    is also checked between the tactics of one expansion (issue 16, defect 7)."""
    clock = FakeClock()

    class TenSecondTactics(ReplayEnv):
        def run_tactic(self, state, tactic):
            clock.now += 10.0
            return super().run_tactic(state, tactic)

    tactics = ScriptedTactics()
    r = best_first_search(TenSecondTactics(abcde), NoPremises(), tactics, SearchConfig(timeout_s=15.0),
                          clock=clock)
    # The root's first two tactics start at 0 and 10 s; the third would start at 20 s > 15 s.
    assert (r.status, r.stop_reason, r.expansions, r.tree.tactics_tried) == ("failed", "timeout", 1, 2)
    assert r.times.total_s == 20.0 and tactics.expanded == ["⊢ A"]


def test_a_model_call_that_outlives_the_budget_ends_the_theorem_as_a_timeout(abcde):
    """The time limit inside a long call: a source that waits with a limit (a Ray actor's)
    raises ModelCallTimeout, and the theorem is a timeout, never a proof."""
    from prover.search.sources import ModelCallTimeout

    class HungTactics:
        def __init__(self, inner, hang_on_call: int) -> None:
            self.inner, self.calls, self.hang_on_call = inner, 0, hang_on_call

        def suggest(self, requests):
            self.calls += 1
            if self.calls == self.hang_on_call:
                raise ModelCallTimeout("generation took over 60 s")
            return self.inner.suggest(requests)

    tactics = HungTactics(ScriptedTactics(), hang_on_call=2)
    r = best_first_search(ReplayEnv(abcde), NoPremises(), tactics, SearchConfig(max_expansions=10))
    assert (r.status, r.stop_reason, r.expansions, r.proof) == ("failed", "timeout", 2, None)
