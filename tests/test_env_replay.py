"""ReplayEnv on the 20 real LeanDojo records of leandojo-sample, and on hand-made traces."""
from __future__ import annotations

import time

import pytest

from prover.data.theorem import load_theorems, parse_theorem
from prover.env.base import (EnvCrash, EnvInitError, GivenUp, ProofFinished, State, TacticError,
                             Timeout)
from prover.env.replay import ReplayConfig, ReplayEnv, pick_initial_state, split_goals
from conftest import tactic, theorem_record

# The main proof of each sample theorem, as indices into its traced tactics: each step's
# state_before is the previous step's state_after, and the last closes the proof. The other
# traced tactics belong to nested `by` blocks (e.g. ENNReal's 3: `by simp [hz]` inside a rw).
CHAINS = {
    "CategoryTheory.Equivalence.invFunIdAssoc_hom_app": [0, 1],
    "ENNReal.le_rpow_one_div_iff": [0, 1, 2],
    "Combinatorics.Line.apply_of_ne_none": [0],
    "Batteries.BinomialHeap.Imp.Heap.WF.tail?": [0, 1, 2],
    "Ideal.span_singleton_eq_span_singleton": [0, 1],
    "IsGroupHom.inv_ker_one'": [0, 1],
    "Convex.thickening": [0, 1],
    "SetTheory.PGame.zero_lf_inv'": [0, 1],
    "NNReal.le_inv_iff_mul_le": [0],
    "MeasureTheory.integrable_of_intervalIntegral_norm_bounded": [0, 1, 2, 3],
}
# These two split into goals that later tactics take one at a time (inside `·` blocks):
# they replay only with focus_goals.
FOCUSED_CHAINS = {
    "CancelDenoms.cancel_factors_lt": [0, 1, 2],
    "MeasureTheory.OuterMeasure.comap_ofFunction": [2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
}


@pytest.fixture(scope="module")
def sample(leandojo_sample):
    return {t.full_name: t for t in load_theorems(leandojo_sample)}


def _replay(thm, steps, config=None):
    """Run the traced tactics `steps` in order; return every result."""
    results = []
    with ReplayEnv(thm, config) as env:
        state = env.initial_state
        assert state.id == 0
        for i in steps:
            result = env.run_tactic(state, thm.traced_tactics[i].tactic)
            results.append(result)
            if isinstance(result, State):
                state = result
    return results


def test_chains_cover_every_sample_theorem_with_tactics(sample):
    with_tactics = {n for n, t in sample.items() if t.traced_tactics}
    assert len(with_tactics) == 12
    assert set(CHAINS) | set(FOCUSED_CHAINS) == with_tactics


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_recorded_proof_replays_to_proof_finished(sample, name):
    thm = sample[name]
    steps = CHAINS[name]
    results = _replay(thm, steps)
    assert isinstance(results[-1], ProofFinished)
    for i, result in zip(steps[:-1], results[:-1]):
        assert isinstance(result, State)
        assert result.text == thm.traced_tactics[i].state_after


@pytest.mark.parametrize("name", sorted(FOCUSED_CHAINS))
def test_split_goals_replay_only_with_focus(sample, name):
    thm = sample[name]
    steps = FOCUSED_CHAINS[name]
    strict = _replay(thm, steps)
    assert isinstance(strict[0], State)  # the split itself is recorded on the whole state
    assert isinstance(strict[1], TacticError)
    focused = _replay(thm, steps, ReplayConfig(focus_goals=True))
    assert all(isinstance(r, State) for r in focused[:-1])
    assert isinstance(focused[-1], ProofFinished)


def test_focus_keeps_the_other_goals(sample):
    thm = sample["CancelDenoms.cancel_factors_lt"]
    split, first, second = thm.traced_tactics
    assert len(split_goals(split.state_after)) == 2
    with ReplayEnv(thm, ReplayConfig(focus_goals=True)) as env:
        s = env.run_tactic(env.initial_state, split.tactic)
        assert env.recorded_tactics(s) == [first.tactic]
        rest = env.run_tactic(s, first.tactic)
        assert rest == State(second.state_before, 2)


def test_initial_state_is_the_main_proofs_root(sample):
    # comap_ofFunction's first two records prove a side goal inside its statement.
    comap = sample["MeasureTheory.OuterMeasure.comap_ofFunction"]
    assert "?u.25201" in comap.traced_tactics[0].state_before
    assert pick_initial_state(comap.traced_tactics) == comap.traced_tactics[2].state_before
    enn = sample["ENNReal.le_rpow_one_div_iff"]
    assert pick_initial_state(enn.traced_tactics) == enn.traced_tactics[0].state_before
    with ReplayEnv(comap) as env:
        assert env.initial_state == State(comap.traced_tactics[2].state_before, 0)


def test_wrong_tactic_and_tactic_of_another_state_are_errors(sample):
    thm = sample["CategoryTheory.Equivalence.invFunIdAssoc_hom_app"]
    with ReplayEnv(thm) as env:
        s0 = env.initial_state
        wrong = env.run_tactic(s0, "simp")
        assert isinstance(wrong, TacticError)
        assert wrong.message == "replay: no recorded tactic 'simp' for this state (1 recorded for it)"
        # aesop_cat is recorded, but from the state after dsimp.
        assert isinstance(env.run_tactic(s0, "aesop_cat"), TacticError)
        unknown = env.run_tactic(State("x : Nat\n⊢ x = x", 99), "rfl")
        assert unknown.message.endswith("(0 recorded for it)")


def test_whitespace_is_normalized_in_tactics_and_states(sample):
    thm = sample["ENNReal.le_rpow_one_div_iff"]
    first, second = thm.traced_tactics[:2]
    with ReplayEnv(thm) as env:
        s1 = env.run_tactic(env.initial_state, "  nth_rw  1\n  [← rpow_one   x] ")
        assert s1 == State(first.state_after, 1)
        reflowed = State("  " + first.state_after.replace("\n", "\n\n   ").replace(" : ", "   :  "), 7)
        s2 = env.run_tactic(reflowed, second.tactic)
        assert s2 == State(second.state_after, 2)
        # Normalization collapses whitespace; it does not drop it.
        assert isinstance(env.run_tactic(env.initial_state, "nth_rw 1 [←rpow_one x]"), TacticError)


def test_sorry_and_admit_give_up(sample):
    thm = sample["Convex.thickening"]
    with ReplayEnv(thm) as env:
        s0 = env.initial_state
        assert env.run_tactic(s0, "sorry") == GivenUp()
        assert env.run_tactic(s0, "exact (sorry : _)") == GivenUp()
        assert env.run_tactic(s0, "  admit") == GivenUp()
        assert isinstance(env.run_tactic(s0, "exact h_sorry"), TacticError)


def _record(tactics):
    return parse_theorem(theorem_record("T.t", "T.lean", tactics), "mem", 0, None)


def test_every_tactic_recorded_from_a_state_is_accepted():
    mid = "h : P\n⊢ Q"
    thm = _record([
        tactic("intro h", before="⊢ P → Q", after=mid),
        tactic("exact f h", before=mid),
        tactic("apply f", before=mid, after="h : P\n⊢ P"),
        tactic("exact (fun x => x) (f h)", before=mid),
        tactic("exact h", before="h : P\n⊢ P"),
    ])
    with ReplayEnv(thm) as env:
        s1 = env.run_tactic(env.initial_state, "intro h")
        assert s1 == State(mid, 1)
        assert env.recorded_tactics(s1) == ["exact f h", "apply f", "exact (fun x => x) (f h)"]
        assert isinstance(env.run_tactic(s1, "exact f h"), ProofFinished)
        assert isinstance(env.run_tactic(s1, "exact (fun x => x) (f h)"), ProofFinished)
        s2 = env.run_tactic(s1, "apply f")
        assert s2 == State("h : P\n⊢ P", 2)
        assert isinstance(env.run_tactic(s2, "exact h"), ProofFinished)
        # The same state reached again has the same id.
        assert env.run_tactic(env.initial_state, "intro h") == s1


def test_delay_is_spent_per_tactic(sample):
    thm = sample["NNReal.le_inv_iff_mul_le"]
    with ReplayEnv(thm, ReplayConfig(delay_s=0.05)) as env:
        t0 = time.monotonic()
        env.run_tactic(env.initial_state, "simp")
        env.run_tactic(env.initial_state, "simp")
        assert time.monotonic() - t0 >= 0.1


def test_simulated_crash_at_open_and_after_tactics(sample):
    name = "Convex.thickening"
    thm = sample[name]
    env = ReplayEnv(thm, ReplayConfig(crash_theorems=[name]))
    with pytest.raises(EnvCrash, match="simulated crash of Convex.thickening after 0 tactics"):
        env.open()
    assert [(f.kind, f.recovered) for f in env.failures] == [("crash", False)]

    env = ReplayEnv(thm, ReplayConfig(crash_theorems=[name], crash_after=1))
    with env:
        s1 = env.run_tactic(env.initial_state, thm.traced_tactics[0].tactic)
        assert isinstance(s1, State)
        with pytest.raises(EnvCrash, match="after 1 tactics"):
            env.run_tactic(s1, thm.traced_tactics[1].tactic)
        with pytest.raises(EnvCrash):  # dead for good
            env.run_tactic(s1, thm.traced_tactics[1].tactic)
    # Other theorems are unaffected.
    other = sample["NNReal.le_inv_iff_mul_le"]
    assert [type(r) for r in _replay(other, [0], ReplayConfig(crash_theorems=[name]))] == [ProofFinished]


def test_simulated_timeout(sample):
    thm = sample["NNReal.le_inv_iff_mul_le"]
    tac = thm.traced_tactics[0].tactic
    with ReplayEnv(thm, ReplayConfig(timeout_tactics=[" " + tac])) as env:
        result = env.run_tactic(env.initial_state, tac)
    assert isinstance(result, Timeout) and result.message.startswith("replay: simulated timeout")


def test_env_must_be_open_and_have_tactics(sample):
    env = ReplayEnv(sample["Convex.thickening"])
    assert env.name == "replay"
    with pytest.raises(RuntimeError, match="not open"):
        env.initial_state
    with pytest.raises(EnvInitError, match="has no traced tactics"):
        ReplayEnv(sample["mul_right_cancel"]).open()
