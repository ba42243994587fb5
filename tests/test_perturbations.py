"""The paper's robustness perturbations of proof states."""
from __future__ import annotations

import random

from prover.data.pairs import PremiseQuery
from prover.data.state import parse_state
from retriever.evaluation.robustness import drop_hypotheses, perturbed_queries, shuffle_hypotheses

BIG = "\n".join(f"h{i} : P{i}" for i in range(20)) + "\n⊢ Q"
TWO_CASES = "case left\na b : ℕ\nh : a ≤ b\n⊢ a ≤ b + 1\n\ncase right\nc : ℕ\n⊢ c = c"


def test_shuffle_keeps_every_hypothesis_and_the_goal():
    out = shuffle_hypotheses(TWO_CASES, random.Random(1))
    before, after = parse_state(TWO_CASES), parse_state(out)
    assert [c.goal for c in after] == [c.goal for c in before]
    assert [c.tag for c in after] == ["left", "right"]
    assert [sorted(h.render() for h in c.hypotheses) for c in after] == \
           [sorted(h.render() for h in c.hypotheses) for c in before]
    shuffled = shuffle_hypotheses(BIG, random.Random(0))
    assert shuffled != BIG and sorted(shuffled.splitlines()) == sorted(BIG.splitlines())


def test_drop_removes_a_fifth_of_large_states_only():
    out = drop_hypotheses(BIG, random.Random(0))
    hyps = parse_state(out)[0].hypotheses
    assert len(hyps) == 16  # 20 - round(0.2 * 20)
    names = [h.names for h in hyps]
    assert names == sorted(names, key=lambda n: int(n[1:]))  # order kept
    assert parse_state(out)[0].goal == "Q"
    assert drop_hypotheses(TWO_CASES, random.Random(0)) is None  # 4 < 15 hypotheses


def test_perturbed_queries_pairs_originals_with_perturbed():
    qs = [PremiseQuery("t1", 0, "F.lean", (1, 1), BIG, (0,)),
          PremiseQuery("t2", 0, "F.lean", (2, 1), TWO_CASES, (1,))]
    orig, pert = perturbed_queries(qs, "drop")
    assert [q.theorem for q in orig] == ["t1"] and [q.theorem for q in pert] == ["t1"]
    assert pert[0].gold == orig[0].gold and pert[0].state != orig[0].state
    orig, pert = perturbed_queries(qs, "shuffle")
    assert len(orig) == len(pert) == 2
