"""The demo sets its CPU threads deliberately, for itself and for the processes it starts."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from prover.commands.demo_settings import DemoConfig, check_demo_config
from prover.config import ConfigError
from prover.utils.threads import THREAD_VARS, set_cpu_threads


def test_set_cpu_threads_reaches_torch_and_child_processes(monkeypatch):
    import torch
    before = torch.get_num_threads()
    for var in THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    try:
        set_cpu_threads(1)
        assert torch.get_num_threads() == 1
        assert {os.environ[v] for v in THREAD_VARS} == {"1"}
        # A process started now (as Ray's workers are) reads the same count.
        child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['OMP_NUM_THREADS'])"],
                               capture_output=True, text=True, timeout=60)
        assert child.stdout.strip() == "1"
    finally:
        torch.set_num_threads(before)


def test_zero_threads_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        set_cpu_threads(0)
    cfg = DemoConfig(threads=0)
    with pytest.raises(ConfigError, match="threads must be at least 1"):
        check_demo_config(cfg)


def test_the_demo_search_is_bounded_by_expansions_not_time():
    """On a busy machine the time limit must not be what ends a search: it is a safety net far
    above what the expansion budget takes."""
    search = DemoConfig().search.search
    assert search.max_expansions == 20 and search.timeout_s >= 600.0
    assert DemoConfig().threads == 1
