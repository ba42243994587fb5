"""What keeps `prover demo` the same on a busy machine (issue 41): one CPU thread per process,
set for the processes it starts too; Ray's workers at the driver's priority, not nice 15; a
search bounded by expansions. benchmarks/demo_load.py runs the whole demo beside busy loops."""
from __future__ import annotations

import os
import subprocess
import sys

import shutil
import tempfile

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


def test_a_local_cluster_runs_its_workers_at_normal_priority_with_our_thread_count(monkeypatch):
    """Ray's default, nice 15, gave each actor about 3% of a core beside two busy loops."""
    ray = pytest.importorskip("ray")
    from prover.search.actors import RaySession
    from prover.search.settings import RayConfig
    for var in THREAD_VARS:
        monkeypatch.setenv(var, "1")  # as set_cpu_threads(1) leaves them, for Ray to inherit
    temp = tempfile.mkdtemp(prefix="rn-", dir="/tmp")  # short: Ray's socket paths have a length limit

    @ray.remote(num_cpus=1)
    class Probe:
        def report(self) -> tuple[int, str, int]:
            import torch
            return os.nice(0), os.environ.get("OMP_NUM_THREADS"), torch.get_num_threads()

    assert not ray.is_initialized()
    session = RaySession(RayConfig(local_num_cpus=2, object_store_mb=100, temp_dir=temp))
    try:
        session.ensure()
        assert ray.get(Probe.remote().report.remote(), timeout=120) == (os.nice(0), "1", 1)
        # The search's time limit holds inside one model call too: a generator actor that hangs
        # is given up on after the budget, not waited for.
        import time

        from prover.search.actors import ActorTactics
        from prover.search.sources import ModelCallTimeout

        @ray.remote(num_cpus=0)
        class Hung:
            def ready(self) -> bool:
                return True

            def suggest(self, requests):
                time.sleep(60)

        hung = Hung.remote()
        ray.get(hung.ready.remote(), timeout=120)
        t0 = time.monotonic()
        with pytest.raises(ModelCallTimeout, match="generation took over 1.0 s"):
            ActorTactics(hung, timeout_s=1.0).suggest([("⊢ True", [])])
        assert time.monotonic() - t0 < 10
    finally:
        session.close()
        shutil.rmtree(temp, ignore_errors=True)
