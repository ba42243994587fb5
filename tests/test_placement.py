"""Ray placement that fits the machine (issue 61): the search's workers and actors are sized from
the CPUs and GPUs Ray has, a request that cannot fit is refused in one line naming the setting,
and no wait on Ray is silent or unbounded."""
from __future__ import annotations

import time

import pytest

from prover.search.placement import PlacementError, plan
from prover.search.settings import RayConfig


def test_defaults_fit_a_two_core_machine():
    """The defaults asked for 4 workers x 1 CPU + a retriever and a generator (6 CPUs): on 2
    cores Ray placed none and the benchmark waited forever. Unset, they share what there is."""
    p = plan(RayConfig(), shared_retriever=True, tasks=10, cpus=2.0)
    assert p.num_workers == 1
    assert p.cpus(1) <= 2.0 and p.worker_cpus == p.retriever_cpus == p.generator_cpus == 0.66
    p = plan(RayConfig(), shared_retriever=False, tasks=10, cpus=2.0)  # no retriever actor
    assert (p.num_workers, p.worker_cpus, p.retriever_cpus, p.generator_cpus) == (1, 1.0, 0.0, 1.0)


def test_defaults_use_a_large_machine_and_no_more_workers_than_theorems():
    p = plan(RayConfig(), shared_retriever=True, tasks=100, cpus=16.0)
    assert (p.num_workers, p.worker_cpus, p.retriever_cpus, p.generator_cpus) == (14, 1.0, 1.0, 1.0)
    assert plan(RayConfig(), shared_retriever=True, tasks=3, cpus=16.0).num_workers == 3
    # REPL workers on a local cluster: at most what memory holds.
    assert plan(RayConfig(), shared_retriever=True, tasks=100, cpus=16.0, max_workers=2).num_workers == 2


def test_a_request_that_fits_is_honoured_as_given():
    cfg = RayConfig(num_workers=3, worker_cpus=0.25, retriever_cpus=0.5, generator_cpus=0.5)
    p = plan(cfg, shared_retriever=True, tasks=20, cpus=2.0)
    assert (p.num_workers, p.worker_cpus, p.retriever_cpus, p.generator_cpus) == (3, 0.25, 0.5, 0.5)
    # Workers given, their CPUs not: they share what the model actors leave.
    p = plan(RayConfig(num_workers=2), shared_retriever=True, tasks=20, cpus=2.0)
    assert p.num_workers == 2 and p.cpus(1) <= 2.0 and p.worker_cpus == 0.5


def test_a_request_that_cannot_fit_is_refused_in_one_line_naming_the_setting():
    cfg = RayConfig(num_workers=4, worker_cpus=1, retriever_cpus=1, generator_cpus=1)
    with pytest.raises(PlacementError) as e:
        plan(cfg, shared_retriever=True, tasks=20, cpus=2.0, where="the local Ray cluster")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("the search asks Ray for 6 CPUs (4 workers x 1, retriever 1, 1 generator x 1) "
                          "but the local Ray cluster has 2 CPUs free")
    assert "ray.num_workers (--workers)" in msg and "ray.worker_cpus" in msg and "null" in msg
    # --workers 2 (what docs/search.md uses) on 2 cores, with whole-CPU actors: named, with the fit.
    with pytest.raises(PlacementError, match=r"ray.num_workers \(--workers\)"):
        plan(RayConfig(num_workers=2, worker_cpus=1, retriever_cpus=1, generator_cpus=1),
             shared_retriever=True, tasks=20, cpus=2.0)


@pytest.mark.parametrize("cfg, key", [
    (RayConfig(generator_gpus=1), "ray.generator_gpus"),
    (RayConfig(retriever_gpus=0.5), "ray.retriever_gpus"),
])
def test_gpus_the_cluster_lacks_are_refused(cfg, key):
    with pytest.raises(PlacementError) as e:
        plan(cfg, shared_retriever=True, tasks=5, cpus=8.0, gpus=0.0)
    assert key in str(e.value) and f"{key}=null" in str(e.value)


def test_gpus_are_shared_when_unset():
    p = plan(RayConfig(), shared_retriever=True, tasks=5, cpus=8.0, gpus=1.0)
    assert (p.retriever_gpus, p.generator_gpus) == (0.5, 0.5)
    p = plan(RayConfig(), shared_retriever=True, tasks=5, cpus=8.0, gpus=0.0)
    assert (p.retriever_gpus, p.generator_gpus) == (0.0, 0.0)


@pytest.mark.parametrize("field, value", [("num_workers", 0), ("num_workers", -1), ("worker_cpus", -1),
                                          ("num_generators", 0)])
def test_nonsense_is_refused(field, value):
    with pytest.raises(PlacementError, match=f"ray.{field}"):
        plan(RayConfig(**{field: value}), shared_retriever=True, tasks=5, cpus=8.0)


def test_stall_limit_follows_the_search_limit():
    from prover.search.benchmark import stall_limit
    from prover.search.best_first import SearchConfig
    assert stall_limit(RayConfig(), SearchConfig(timeout_s=600.0)) == 3 * 600 + 300
    assert stall_limit(RayConfig(stall_timeout_s=50), SearchConfig(timeout_s=600.0)) == 50
    assert stall_limit(RayConfig(stall_timeout_s=0), SearchConfig(timeout_s=600.0)) is None  # 0: none


@pytest.fixture
def small_ray():
    """A local Ray cluster with 1 CPU: Ray's resources set small."""
    import shutil
    import tempfile
    ray = pytest.importorskip("ray")
    from prover.utils.ray_cluster import start_ray
    temp = tempfile.mkdtemp(prefix="rp-", dir="/tmp")
    start_ray("local", num_cpus=1, object_store_mb=100, temp_dir=temp)
    yield ray
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


def test_a_wait_on_an_actor_ray_cannot_place_ends_in_one_line(small_ray, caplog):
    """An actor asking for more than the cluster has: progress lines, then one line at the limit."""
    from prover.utils.ray_cluster import RayWaitTimeout, wait_ready

    @small_ray.remote(num_cpus=4)
    class Big:
        pass

    actor = Big.remote()
    t0 = time.monotonic()
    with caplog.at_level("WARNING"), pytest.raises(RayWaitTimeout) as e:
        wait_ready([actor.__ray_ready__.remote()], 3.0, "test actors", "ray.start_timeout_s", every_s=1.0)
    assert time.monotonic() - t0 < 10
    assert "\n" not in str(e.value)
    assert str(e.value).startswith("ray: 1 of 1 test actors not ready after 3 s") and "ray.start_timeout_s" in str(e.value)
    assert any("waiting for 1 of 1 test actors" in r.getMessage() for r in caplog.records)
    small_ray.kill(actor)


def _demo_cfg(tmp_path, *overrides):
    from prover.config import load_config
    from prover.search.settings import SearchBenchmarkConfig
    return load_config(SearchBenchmarkConfig, None, [
        "theorems.source=demo", "theorems.split=random/test", "theorems.limit=4", "env.name=replay",
        "env.replay.focus_goals=true", "retriever.name=none", f"out_dir={tmp_path / 'bench'}",
        "search.max_expansions=10", "progress=false", *overrides])


def _oracle():
    from prover.data.dataset import Dataset
    from tests.search_doubles import OracleSpec
    return OracleSpec(Dataset("demo").theorems("random/test"), focus_goals=True)


def test_the_default_settings_finish_on_a_small_cluster(small_ray, tmp_path, monkeypatch):
    """The acceptance line: the benchmark's defaults (no ray.* set) on a cluster with 1 CPU
    place one worker and finish, where the old defaults (6 whole CPUs) waited forever."""
    from prover.search.benchmark import run_benchmark
    monkeypatch.setenv("PROVER_CACHE", str(tmp_path / "cache"))
    t0 = time.monotonic()
    summary = run_benchmark(_demo_cfg(tmp_path), ["none"], tactic_spec=_oracle())
    row = summary["runs"]["replay-none"]
    assert row["theorems"] == 4 and row["proved"] >= 1
    assert time.monotonic() - t0 < 300


def test_a_request_ray_cannot_place_is_refused_in_one_line_within_10_s(small_ray, tmp_path, monkeypatch):
    """4 workers x 1 CPU on a 1-CPU cluster: refused on what Ray reports, before any actor starts."""
    from prover.search.benchmark import run_benchmark
    monkeypatch.setenv("PROVER_CACHE", str(tmp_path / "cache"))
    cfg = _demo_cfg(tmp_path, "ray.num_workers=4", "ray.worker_cpus=1")
    t0 = time.monotonic()
    with pytest.raises(PlacementError) as e:
        run_benchmark(cfg, ["none"], tactic_spec=_oracle())
    assert time.monotonic() - t0 < 10
    assert "\n" not in str(e.value) and "ray.num_workers (--workers)" in str(e.value)
    assert "4 workers x 1" in str(e.value) and "has 1 CPU free" in str(e.value)


def test_the_command_refuses_before_ray_starts(tmp_path):
    """`prover benchmark --workers 4 ray.worker_cpus=1 ray.local_num_cpus=1`: one line, exit 2,
    before any model, data or Ray loads (the local cluster's CPUs are known beforehand)."""
    import os
    import subprocess
    import sys
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "prover.cli", "benchmark", "--theorems", "demo", "--split",
                           "random/test", "--env", "replay", "--generator", str(tmp_path / "no-model"),
                           "--workers", "4", "ray.worker_cpus=1", "ray.local_num_cpus=1"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "HOME": str(tmp_path / "home")})
    assert time.monotonic() - t0 < 10
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: the search asks Ray for 4.05 CPUs (4 workers x 1, 1 generator x at least 0.05) but the "
        "local Ray cluster has 1 CPU free: lower ray.num_workers (--workers), ray.worker_cpus, or set them "
        "to null to fit the machine"]


def test_a_ray_that_does_not_start_is_one_line(monkeypatch):
    """Ray's own start-up limit (seen on an overloaded machine: "The current node timed out during
    startup") ends as one line, not a traceback through Ray's internals."""
    ray = pytest.importorskip("ray")
    from prover.utils.ray_cluster import RayWaitTimeout, start_ray
    if ray.is_initialized():
        pytest.fail("a Ray is already up in this process")

    calls = []

    def init(**kwargs):
        calls.append(kwargs)
        raise Exception("The current node timed out during startup. This could happen because\n"
                        "some of the raylet failed to startup or the GCS has become overloaded.")

    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(RayWaitTimeout) as e:
        start_ray(None, num_cpus=1)
    assert str(e.value) == ("ray: the local Ray cluster did not start: The current node timed out during "
                            "startup. This could happen because some of the raylet failed to startup or the "
                            "GCS has become overloaded.")
    assert len(calls) == 2  # a local start is tried twice (Ray's 30 s raylet limit, on a loaded machine)
