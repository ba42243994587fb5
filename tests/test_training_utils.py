"""Shared training utilities: budgets that count training only."""
from __future__ import annotations

import time

from prover.utils.training import Budget, Progress


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
    assert progress.extra["excluded_seconds"] >= 0.5
    _burn(0.4)
    assert budget.exhausted()


def test_budget_wall_clock_excludes_too():
    progress = Progress()
    budget = Budget(progress, max_minutes=None, clock="wall")
    with budget.excluded():
        time.sleep(0.3)
    budget.tick()
    assert progress.seconds < 0.1 and not budget.exhausted()
