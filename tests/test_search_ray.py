"""The benchmark on a local Ray cluster: 20 leandojo-sample theorems, ReplayEnv, the tiny
generator, BM25 and CFR retrievers; resume after an interruption; killed workers. (The same
benchmark submitted with `ray job submit`: tests/test_ray_jobs.py.)

Corpus: mathlib-src-mini (the sample's Mathlib commit, 9,375 premises) rather than the full
mathlib-src (181k premises: BM25 and the CFR index over it would dominate the test's time and
memory). Most sample theorems' files are not in mini; their states are ranked against all of
mini (the retriever counts these as `contexts_dropped`).
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from prover.config import load_config
from prover.data.theorem import load_theorems
from prover.search.benchmark import Hooks, run_benchmark
from prover.search.results import ResultsFile
from prover.search.settings import SearchBenchmarkConfig
from tests.conftest import REPO
from tests.search_doubles import OracleSpec

ray = pytest.importorskip("ray")

SAMPLE_WITH_TACTICS = 12
SAMPLE_WITHOUT_TACTICS = 8  # ReplayEnv cannot open these: environment-start failures


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory, mini_root, one_thread):
    """A tiny generator (4 steps) and a tiny CFR (10 MLM + 5 CFR steps), trained here: the
    search machinery is under test, not what so little training learns."""
    from generator.settings import GeneratorTrainConfig
    from generator.train import train_generator
    from retriever.training.pretrain import pretrain
    from retriever.settings import RetrieverTrainConfig
    from retriever.training.train_cfr import train_cfr
    root = tmp_path_factory.mktemp("search-models")
    gen = load_config(GeneratorTrainConfig, str(REPO / "configs/generator/tiny.yaml"), [
        f"run_dir={root / 'gen'}", f"data.root={mini_root}", "train.max_steps=4",
        "train.eval_beams=0", "train.eval_examples=8", "train.log_every=4"])
    model = train_generator(gen)["model"]
    ret = load_config(RetrieverTrainConfig, str(REPO / "configs/retriever/tiny.yaml"), [
        f"run_dir={root / 'ret'}", f"data.root={mini_root}", "device=cpu", "pretrain.max_steps=10",
        "cfr.max_steps=5", "cfr.eval_every=-1"])
    pretrain(ret)
    train_cfr(ret)
    return {"generator": str(model), "retriever_run_dir": str(root / "ret")}


@pytest.fixture(scope="module")
def local_ray():
    temp = tempfile.mkdtemp(prefix="rt-", dir="/tmp")  # short: Ray's socket paths have a length limit
    ray.init(address="local", num_cpus=2, include_dashboard=False, _temp_dir=temp,
             object_store_memory=128 * 2**20, logging_level="WARNING")
    yield
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


def _cfg(out: Path, models: dict, data_root: Path, *overrides: str):
    return load_config(SearchBenchmarkConfig, str(REPO / "configs/search/tiny.yaml"), [
        f"theorems.source={data_root / 'leandojo-sample' / 'test.json'}",
        f"retriever.corpus={data_root / 'mathlib-src-mini'}",
        f"retriever.models={REPO / 'configs/retriever/tiny.yaml'}",
        f"retriever.run_dir={models['retriever_run_dir']}",
        f"generator.model={models['generator']}", f"out_dir={out}", *overrides])


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_benchmark_with_bm25_and_cfr(tmp_path, tiny_models, local_ray, data_root):
    cfg = _cfg(tmp_path / "bench", tiny_models, data_root)
    summary = run_benchmark(cfg, ["bm25", "cfr"], command="test")
    out = tmp_path / "bench"
    for name in ("bm25", "cfr"):
        records = _lines(out / f"replay-{name}" / "results.jsonl")
        assert len(records) == 20 and len({r["key"] for r in records}) == 20
        assert {r["env"] for r in records} == {"replay"} and {r["retriever"] for r in records} == {name}
        starts = [r for r in records if not r["env_started"]]
        assert len(starts) == SAMPLE_WITHOUT_TACTICS
        assert all(r["status"] == "error" and r["error_kind"] == "env_start" for r in starts)
        searched = [r for r in records if r["env_started"]]
        assert all(1 <= r["expansions"] <= 3 and r["times"]["generation_s"] > 0 for r in searched)
        for r in searched:
            if r["status"] == "proved":  # a barely trained generator may still hit a short proof
                assert r["proof"] and r["tree"]["outcomes"]["proof"] == 1
        row = summary["runs"][f"replay-{name}"]
        assert row["theorems"] == 20 and row["env_start_failures"] == SAMPLE_WITHOUT_TACTICS
        assert row["rate_label"] == "replay proof rate"
        assert row["proved"] + row["failed"] + row["errors"] + row["env_start_failures"] == 20
        assert row["mean_nodes"] == pytest.approx(sum(r["expansions"] for r in searched) / len(searched), abs=1e-3)
        info = json.loads((out / f"replay-{name}" / "run.json").read_text())
        batching = info["batching"]
        assert batching["retriever"]["items"] == sum(r["expansions"] for r in records)
        assert batching["retriever"]["name"] == name and batching["retriever"]["contexts_dropped"] >= 1
        assert batching["generators"][0]["items"] == batching["retriever"]["items"]
        assert 1 <= batching["retriever"]["max_batch_size_seen"] <= 2  # two workers share it
    md = (out / "summary.md").read_text()
    assert "## env: replay (simulator)" in md and "| replay proof rate |" in md
    assert "| pass@1 |" not in md
    table = [line for line in md.splitlines() if line.startswith(("| bm25 ", "| cfr "))]
    assert len(table) == 2 and all(f"| {SAMPLE_WITHOUT_TACTICS} |" in line for line in table)
    assert set(json.loads((out / "summary.json").read_text())["runs"]) == {"replay-bm25", "replay-cfr"}


# The oracle TEST DOUBLE puts 4 failing distractors before the recorded tactics: let it reach them.
ORACLE_SEARCH = ("generator.num_tactics=16", "search.max_expansions=null")


@pytest.fixture(scope="module")
def sample_theorems(leandojo_sample):
    return load_theorems(leandojo_sample)


def test_resume_after_interruption(tmp_path, tiny_models, local_ray, data_root, sample_theorems):
    """Interrupted after 5 results (as Ctrl-C would, in the driver), with a half-written line
    at the end of the file; the rerun proves only the other 15."""
    cfg = _cfg(tmp_path / "bench", tiny_models, data_root, *ORACLE_SEARCH, "env.replay.delay_s=0.01")
    oracle = OracleSpec(sample_theorems, focus_goals=True)
    seen = []

    def interrupt(record, dispatcher):
        seen.append(record["key"])
        if len(seen) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_benchmark(cfg, ["none"], Hooks(on_result=interrupt), tactic_spec=oracle)
    path = tmp_path / "bench" / "replay-none" / "results.jsonl"
    first = _lines(path)
    assert [r["key"] for r in first] == seen
    with open(path, "a") as f:
        f.write('{"key": "half a reco')  # a kill in the middle of a write
    assert len(ResultsFile(path).records()) == 5

    again = []
    summary = run_benchmark(cfg, ["none"], Hooks(on_result=lambda r, d: again.append(r["key"])),
                            tactic_spec=oracle)
    records = _lines(path)  # every line parses: the half line is gone
    assert records[:5] == first and len(records) == 20
    assert len(again) == 15 and not set(again) & set(seen)
    row = summary["runs"]["replay-none"]
    # The oracle test double proposes the recorded tactics: every theorem with a trace is proved.
    assert (row["proved"], row["env_start_failures"], row["failed"]) == (SAMPLE_WITH_TACTICS,
                                                                         SAMPLE_WITHOUT_TACTICS, 0)
    assert row["rate"] == 0.6
    # A third run has nothing left to do and starts no actors.
    calls = []
    run_benchmark(cfg, ["none"], Hooks(on_fleet=calls.append), tactic_spec=oracle)
    assert calls == [] and len(_lines(path)) == 20


def test_killed_worker_loses_nothing(tmp_path, tiny_models, local_ray, data_root, sample_theorems):
    cfg = _cfg(tmp_path / "bench", tiny_models, data_root, *ORACLE_SEARCH, "env.replay.delay_s=0.02",
               "ray.num_workers=2")
    oracle = OracleSpec(sample_theorems, focus_goals=True)
    killed, fleets = [], []

    def kill_a_busy_worker(record, dispatcher):
        if not killed and dispatcher.busy_workers():
            victim = dispatcher.busy_workers()[0]  # mid-search: its theorem is in flight
            killed.append(f"replay-none/worker-{fleets[0].workers.index(victim)}")
            ray.kill(victim, no_restart=True)

    summary = run_benchmark(cfg, ["none"], Hooks(on_result=kill_a_busy_worker, on_fleet=fleets.append),
                            tactic_spec=oracle)
    records = _lines(tmp_path / "bench" / "replay-none" / "results.jsonl")
    assert len(killed) == 1
    assert len(records) == 20 and len({r["key"] for r in records}) == 20
    # The theorem the dead worker was running went to the surviving worker, once.
    retried = [r for r in records if r["attempt"] == 2]
    assert len(retried) == 1 and retried[0]["worker"] != killed[0]
    info = json.loads((tmp_path / "bench" / "replay-none" / "run.json").read_text())
    session = info["last_session"]
    assert (session["workers_lost"], session["retries"]) == (1, 1)
    assert session["expansions"] == sum(r["expansions"] for r in records)
    assert summary["runs"]["replay-none"]["proved"] == SAMPLE_WITH_TACTICS


def test_killed_generator_actor_is_restarted(tmp_path, tiny_models, local_ray, data_root, sample_theorems):
    """Ray restarts a dead model actor (ray.actor_restarts); the searches waiting on it go on.
    One theorem's environment crashes mid-search: it is recorded as an error with the message."""
    cfg = _cfg(tmp_path / "bench", tiny_models, data_root, *ORACLE_SEARCH, "env.replay.delay_s=0.01",
               'env.replay.crash_theorems=["Convex.thickening"]', "env.replay.crash_after=2")
    fleets, killed = [], []

    def kill_generator(record, dispatcher):
        if len(killed) == 0 and dispatcher.recorded == 3:
            pid = ray.get(fleets[0].generators[0].stats.remote())["pid"]
            killed.append(pid)
            ray.kill(fleets[0].generators[0], no_restart=False)

    summary = run_benchmark(cfg, ["none"], Hooks(on_result=kill_generator, on_fleet=fleets.append),
                            tactic_spec=OracleSpec(sample_theorems, focus_goals=True))
    records = _lines(tmp_path / "bench" / "replay-none" / "results.jsonl")
    assert len(killed) == 1 and len({r["key"] for r in records}) == 20
    row = summary["runs"]["replay-none"]
    assert (row["proved"], row["errors"]) == (SAMPLE_WITH_TACTICS - 1, 1)
    crashed = next(r for r in records if r["theorem"] == "Convex.thickening")
    assert (crashed["status"], crashed["error_kind"]) == ("error", "env_crash")
    assert crashed["error"] == "replay: simulated crash of Convex.thickening after 2 tactics"
    info = json.loads((tmp_path / "bench" / "replay-none" / "run.json").read_text())
    assert info["batching"]["generators"][0]["pid"] != killed[0]  # a new process served the rest


def test_worker_deaths_are_bounded(tmp_path, tiny_models, local_ray, data_root, sample_theorems):
    """A theorem whose workers keep dying is recorded as lost after max_attempts, the run goes
    on with the workers left, and a rerun tries that theorem again (its loss was not its fault)."""
    names = ["UFModel.Models.parent_eq'", "CategoryTheory.Equivalence.invFunIdAssoc_hom_app",
             "Convex.thickening", "NNReal.le_inv_iff_mul_le"]
    cfg = _cfg(tmp_path / "bench", tiny_models, data_root, "ray.num_workers=3", "ray.max_attempts=2",
               f"theorems.names={json.dumps(names)}", *ORACLE_SEARCH)
    oracle = OracleSpec(sample_theorems, focus_goals=True)
    killed = []

    def kill_if_target(task, worker, attempt):
        if task.name == "Convex.thickening":
            killed.append(attempt)
            ray.kill(worker, no_restart=True)

    summary = run_benchmark(cfg, ["none"], Hooks(on_dispatch=kill_if_target), tactic_spec=oracle)
    path = tmp_path / "bench" / "replay-none" / "results.jsonl"
    records = {r["theorem"]: r for r in _lines(path)}
    assert killed == [1, 2] and set(records) == set(names)
    lost = records["Convex.thickening"]
    assert (lost["status"], lost["error_kind"], lost["attempt"]) == ("error", "worker_lost", 2)
    assert lost["error"].startswith("gave up after 2 attempts; last: worker died")
    assert records["NNReal.le_inv_iff_mul_le"]["status"] == "proved"
    assert summary["runs"]["replay-none"]["worker_lost"] == 1
    assert "| 1 | 1 |" in (tmp_path / "bench" / "summary.md").read_text()  # errors, env start failures

    again = []
    summary = run_benchmark(cfg, ["none"], Hooks(on_result=lambda r, d: again.append(r["theorem"])),
                            tactic_spec=oracle)
    assert again == ["Convex.thickening"]
    row = summary["runs"]["replay-none"]
    assert (row["proved"], row["worker_lost"], row["env_start_failures"]) == (3, 0, 1)
