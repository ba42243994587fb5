"""What runs as a `ray job submit` to a `ray start --head` cluster on loopback: the proof-search
benchmark, and a training stage on two Ray Train workers that a budget stops and a rerun resumes.

One head serves the module's jobs (starting one takes a while). It runs as `ray start --head
--block` in a child process of the test: terminating that process stops the processes it
started, and only those (`ray stop` would stop every Ray on the machine, other users' included).
Every port is a free one, and the temp dir is private. The dashboard (the jobs API) listens on
127.0.0.1 and the jobs are submitted there; Ray itself turns `--node-ip-address=127.0.0.1` into
the host's address and binds its gRPC servers as it does. Token authentication is set up here,
for the head, the jobs client and (inherited from the head) the jobs' drivers: nothing comes
from ~/.ray, so the tests pass the same on a new machine with an empty HOME.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from tests.conftest import DATA_ROOT, REPO, require
from tests.search_doubles import save_untrained_generator

pytest.importorskip("ray")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _ray_bin() -> str:
    found = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
    if not Path(found).exists():
        pytest.fail("the ray command line is not installed beside this Python")
    return found


@pytest.fixture
def untrained_generator(tmp_path):
    """The job's plumbing is under test: a tiny generator straight from initialization."""
    return save_untrained_generator(tmp_path / "gen")


@pytest.fixture(scope="module")
def ray_auth() -> dict[str, str]:
    """The environment of the head and of every `ray job submit`: Ray's token authentication
    with a token of the module's own, and one OpenMP policy for the jobs' small models."""
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
           "OMP_WAIT_POLICY": "PASSIVE"}
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    env.pop("RAY_ADDRESS", None)
    return env


@pytest.fixture(scope="module")
def head_node(tmp_path_factory, ray_auth):
    """The dashboard's address of a head with three CPUs: two Ray Train workers beside a driver."""
    logs = tmp_path_factory.mktemp("ray-head")
    gcs, dash, client, node_mgr, obj_mgr, agent, agent_grpc, env_agent, metrics = _free_ports(9)
    temp = tempfile.mkdtemp(prefix="rj-", dir="/tmp")  # short: socket paths have a length limit
    log = open(logs / "ray-start.log", "w")
    proc = subprocess.Popen(
        [_ray_bin(), "start", "--head", "--block", f"--port={gcs}", "--node-ip-address=127.0.0.1",
         "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}",
         f"--ray-client-server-port={client}", f"--node-manager-port={node_mgr}",
         f"--object-manager-port={obj_mgr}", f"--dashboard-agent-listen-port={agent}",
         f"--dashboard-agent-grpc-port={agent_grpc}", f"--runtime-env-agent-port={env_agent}",
         f"--metrics-export-port={metrics}", "--num-cpus=3", f"--object-store-memory={128 * 2**20}",
         f"--temp-dir={temp}", "--disable-usage-stats"],
        stdout=log, stderr=subprocess.STDOUT, env=ray_auth)
    address = f"http://127.0.0.1:{dash}"
    try:
        _wait_for_dashboard(address, proc, logs / "ray-start.log")
        yield address
    finally:
        proc.terminate()  # --block: ray start stops the processes it started
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        _reap(temp)
        shutil.rmtree(temp, ignore_errors=True)


def _wait_for_dashboard(address: str, proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    import urllib.error
    import urllib.request
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"ray start exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{address}/api/version", timeout=2):
                return
        except urllib.error.HTTPError as e:
            if e.code == 401:  # up, and asking for the cluster's auth token (Ray's token auth)
                return
            time.sleep(1)
        except OSError:
            time.sleep(1)
    pytest.fail(f"the dashboard at {address} did not come up in {timeout:.0f} s")


def _reap(temp: str) -> None:
    """Stop any process of this head left behind (found by its private temp dir), by pid."""
    import psutil
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(temp in part for part in (p.info["cmdline"] or [])):
                p.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass


def test_benchmark_runs_as_a_ray_job(tmp_path, head_node, ray_auth, untrained_generator, data_root):
    import urllib.error
    import urllib.request
    # The head enforces the test's token: a request without it is refused.
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{head_node}/api/jobs/", timeout=10)
    assert refused.value.code == 401
    out = tmp_path / "out"
    cmd = [_ray_bin(), "job", "submit", "--address", head_node, "--",
           sys.executable, str(REPO / "benchmarks" / "search_job.py"),
           "--config", str(REPO / "configs" / "search" / "tiny.yaml"),
           "--theorems", str(data_root / "leandojo-sample" / "test.json"), "--limit", "6",
           "--retriever", "bm25", "--env", "replay", "--corpus", str(data_root / "mathlib-src-mini"),
           "--generator", str(untrained_generator), "--out", str(out),
           "search.max_expansions=1", "generator.num_tactics=2"]
    # The head asks for the token (ray_auth); the jobs client sends the same one.
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=ray_auth)
    logs = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, logs
    assert "succeeded" in done.stdout, logs
    records = [json.loads(line) for line in (out / "replay-bm25" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 6 and {r["env"] for r in records} == {"replay"}
    info = json.loads((out / "replay-bm25" / "run.json").read_text())
    assert info["batching"]["retriever"]["name"] == "bm25"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"]["replay-bm25"]["theorems"] == 6
    # The job's driver joined the submitted-to cluster instead of starting its own.
    assert "starting a local cluster" not in done.stdout and "joining" in done.stdout


def test_a_training_job_writes_a_checkpoint_and_a_rerun_resumes_from_it(tmp_path, head_node, ray_auth):
    """`prover retriever pretrain` on two Ray Train workers inside a job: stopped by its budget
    after the first step, then the same command without the budget resumes and finishes."""
    mini = require(DATA_ROOT / "mathlib-src-mini")
    run_dir = tmp_path / "run"
    common = ["python", "-m", "prover.cli", "retriever", "pretrain", "--config",
              str(REPO / "configs/retriever/tiny.yaml"), f"data.root={mini}", f"run_dir={run_dir}",
              "device=cpu", "tokenizer.vocab_size=1000", "pretrain.max_steps=6",
              "pretrain.eval_fraction=0.01", "trainer.workers=2"]

    def submit(*extra: str) -> None:
        out = subprocess.run([_ray_bin(), "job", "submit", f"--address={head_node}",
                              "--runtime-env-json", json.dumps({"env_vars": {"PYTHONPATH": str(REPO)}}),
                              "--", *common, *extra],
                             env=ray_auth, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]

    submit("pretrain.max_minutes=0.001")  # stopped by its budget after the first step
    state = torch.load(run_dir / "pretrain/checkpoint/state.pt", weights_only=False)
    stopped_at = state["progress"]["step"]
    assert 1 <= stopped_at < 6 and not state["progress"]["done"]
    submit()  # the same command without the budget: resumes, finishes
    rows = [json.loads(line) for line in (run_dir / "pretrain/train_log.jsonl").read_text().splitlines()]
    starts = [r for r in rows if r.get("event") == "start"]
    assert [(s["step"], s["workers"]) for s in starts] == [(0, 2), (stopped_at, 2)]
    steps = [r["step"] for r in rows if "loss" in r]
    assert sorted(steps) == steps and steps[-1] == 6
    summary = json.loads((run_dir / "pretrain/summary.json").read_text())
    assert summary["done"] and summary["steps"] == 6 and summary["workers"] == 2
    assert (run_dir / "pretrain/model/config.json").exists()


def test_cli_starts_a_local_cluster_by_default(tmp_path, untrained_generator, data_root, monkeypatch, capsys):
    """No address and no RAY_ADDRESS: `prover benchmark` starts its own Ray and stops it after."""
    import ray
    from prover.cli import main
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized()
    out = tmp_path / "out"
    code = main(["benchmark", "--config", str(REPO / "configs" / "search" / "tiny.yaml"),
                 "--theorems", str(data_root / "leandojo-sample" / "test.json"), "--limit", "4",
                 "--retriever", "none", "--env", "replay", "--generator", str(untrained_generator),
                 "--out", str(out), "search.max_expansions=1", "generator.num_tactics=2"])
    assert code == 0 and not ray.is_initialized()
    records = [json.loads(line) for line in (out / "replay-none" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 4 and {r["retriever"] for r in records} == {"none"}
    assert "| replay proof rate |" in capsys.readouterr().out
    info = json.loads((out / "replay-none" / "run.json").read_text())
    assert info["command"].startswith("prover benchmark --config") and info["batching"]["retriever"] is None


def test_cluster_launcher_config_is_valid():
    """configs/cluster/cluster.yaml passes the Ray cluster launcher's own schema check."""
    import yaml
    from ray.autoscaler._private.util import prepare_config, validate_config
    raw = yaml.safe_load((REPO / "configs" / "cluster" / "cluster.yaml").read_text())
    validate_config(prepare_config(raw))
    types = raw["available_node_types"]
    assert types[raw["head_node_type"]]["resources"]["GPU"] == 1
    assert any(t["resources"].get("GPU", 0) == 0 and t["max_workers"] > 0 for t in types.values())
    assert "pip install -e" in " ".join(raw["setup_commands"])
