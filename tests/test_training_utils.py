"""Shared training utilities: budgets that count training only."""
from __future__ import annotations

import time

import numpy as np

from prover.training.run import Budget, Progress, length_grouped_order


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_budget_does_not_count_excluded_work():
    progress = Progress()
    budget = Budget(progress, max_minutes=0.5 / 60, clock="cpu")  # half a CPU-second
    _burn(0.2)
    with budget.excluded():
        _burn(0.6)  # validation: more than the whole budget, yet not counted
    assert not budget.exhausted()
    assert 0.15 < progress.cpu_seconds < 0.45
    assert progress.excluded_seconds >= 0.5
    _burn(0.4)
    assert budget.exhausted()


def test_budget_wall_clock_excludes_too():
    progress = Progress()
    budget = Budget(progress, max_minutes=None, clock="wall")
    with budget.excluded():
        time.sleep(0.3)
    budget.tick()
    assert progress.seconds < 0.1 and not budget.exhausted()


def test_length_grouped_order_is_a_seeded_permutation_of_similar_length_batches():
    lengths = np.random.default_rng(0).integers(1, 1000, size=1000)
    order = length_grouped_order(lengths, batch_size=10, seed=3, epoch=0, group_batches=20)
    assert sorted(order.tolist()) == list(range(1000))
    assert np.array_equal(order, length_grouped_order(lengths, 10, 3, 0, 20))  # resumable
    assert not np.array_equal(order, length_grouped_order(lengths, 10, 3, 1, 20))
    # Within a batch lengths are close: the mean spread is far below a random batch's.
    spread = np.ptp(lengths[order].reshape(-1, 10), axis=1).mean()
    assert spread < 0.2 * np.ptp(lengths[np.random.default_rng(1).permutation(1000)].reshape(-1, 10), axis=1).mean()


def test_a_checkpoint_from_before_the_typed_run_state_still_loads():
    old = {"step": 7, "epoch": 1, "done": False,
           "extra": {"attempts": 2, "best_step": 6, "last_eval_step": 6, "own": 1}}
    p = Progress.from_dict(old)
    assert (p.step, p.attempts, p.best_step, p.last_eval_step, p.extra) == (7, 2, 6, 6, {"own": 1})
    assert Progress.from_dict({**p.__dict__}) == p
