"""The one training engine (`prover/training/`): every stage's losses are those of the loop it
replaced; two gloo workers train as one worker with their combined batch and hold identical
weights after every step; a run submitted as a Ray job to a local cluster writes its
checkpoint, and a rerun resumes from it."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM

from conftest import DATA_ROOT, REPO, require
from prover.config import load_config
from prover.data.dataset import Dataset
from prover.data.pairs import state_premise_pairs
from retriever.models.text import format_state, premise_text
from retriever.models.tokenizer import train_tokenizer
from retriever.registry import build_retriever
from retriever.settings import RetrieverTrainConfig
from generator.settings import GeneratorTrainConfig

FIXTURE = REPO / "tests/fixtures/training_losses"
TINY = str(REPO / "configs/retriever/tiny.yaml")


def _settings() -> dict[str, list[str]]:
    spec = importlib.util.spec_from_file_location("record_losses", FIXTURE / "record.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SETTINGS


def loss_rows(path: Path) -> list[float]:
    return [r["loss"] for r in map(json.loads, path.read_text().splitlines()) if "loss" in r]


@pytest.fixture(scope="module")
def engine_losses(tmp_path_factory, monkeypatch_module) -> dict[str, list[float]]:
    """The five stages trained through the engine exactly as `record.py` trained the old loops."""
    import generator.train as gen_train
    import retriever.training.pretrain as pretrain
    import retriever.training.train_car as train_car
    import retriever.training.train_cfr as train_cfr
    import retriever.training.train_reprover as train_reprover
    # As recorded: no corpus encode for the ReProver-style validation (only losses are compared).
    monkeypatch_module.setattr(train_reprover, "validate", lambda *a, **k: (0.0, None))
    mini = require(DATA_ROOT / "mathlib-src-mini")
    tmp = tmp_path_factory.mktemp("engine")
    settings = _settings()
    base = [f"data.root={mini}", f"run_dir={tmp}/r", "device=cpu", "seed=42"]
    rcfg = lambda stage: load_config(RetrieverTrainConfig, TINY, base + settings[stage])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        pretrain.pretrain(rcfg("pretrain"))
        train_cfr.train_cfr(rcfg("cfr"))
        cfg = rcfg("car")
        train_car.train_car(cfg, build_retriever("bm25", Dataset(cfg.data.root).corpus(), cfg))
        train_reprover.train_reprover(rcfg("reprover"))
        gen_train.train_generator(load_config(
            GeneratorTrainConfig, str(REPO / "configs/generator/tiny.yaml"),
            [f"data.root={mini}", f"run_dir={tmp}/g", "device=cpu", "seed=42"] + settings["generator"]))
    finally:
        torch.set_num_threads(threads)
    return {"pretrain": loss_rows(tmp / "r/pretrain/train_log.jsonl"),
            "cfr": loss_rows(tmp / "r/cfr/train_log.jsonl"),
            "car": loss_rows(tmp / "r/car-bm25/train_log.jsonl"),
            "reprover": loss_rows(tmp / "r/reprover/train_log.jsonl"),
            "generator": loss_rows(tmp / "g/generator/train_log.jsonl")}


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.mark.parametrize("stage", ["pretrain", "cfr", "car", "reprover", "generator"])
def test_each_stage_trains_as_the_loop_it_replaced(engine_losses, stage):
    ref = json.loads((FIXTURE / "reference.json").read_text())
    expected = ref["losses"][stage]
    assert len(expected) >= 29  # CAR's 300 pairs make one 29-step epoch; the others run 50 steps
    got = engine_losses[stage]
    assert len(got) == len(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert got[-1] < got[0]  # and they did learn


# ---------------------------------------------------------------------------------------
# Two workers (Ray Train, gloo)

@pytest.fixture(scope="module")
def no_dropout_encoder(tmp_path_factory) -> Path:
    """An encoder without dropout, so that one worker and two see the same network."""
    ds = Dataset(require(DATA_ROOT / "mathlib-src-mini"))
    corpus = ds.corpus()
    pairs, _ = state_premise_pairs(ds.theorems("random/train"), corpus)
    out = tmp_path_factory.mktemp("encoder")
    tok = train_tokenizer([format_state(p.state) for p in pairs] + [premise_text(p) for p in corpus.premises],
                          vocab_size=2000, out_dir=out)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=128, max_position_embeddings=128, pad_token_id=tok.pad_token_id,
                               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)).save_pretrained(out)
    return out


def _car_run(run_dir: Path, encoder: Path, *trainer: str) -> Path:
    from retriever.training.train_car import train_car
    mini = require(DATA_ROOT / "mathlib-src-mini")
    cfg = load_config(RetrieverTrainConfig, TINY, [
        f"data.root={mini}", f"run_dir={run_dir}", "device=cpu", "seed=3", "car.max_len=64", "car.negatives=3",
        "car.random_negatives=1", "car.batch_size=16", "car.hard_negatives_k=20", "car.max_train_pairs=120",
        "car.eval_queries=5", "car.k1=10", "car.k2=5", "car.max_steps=5", "car.log_every=1",
        "car.warmup_steps=1", "car.attention_dropout=0.0", *trainer])
    return train_car(cfg, build_retriever("bm25", Dataset(mini).corpus(), cfg), init_path=encoder)


def test_two_gloo_workers_train_as_one_worker_with_their_combined_batch(no_dropout_encoder, tmp_path):
    one = _car_run(tmp_path / "one", no_dropout_encoder)
    two = _car_run(tmp_path / "two", no_dropout_encoder, "trainer.workers=2", "trainer.check_replicas=true")
    rows = [json.loads(line) for line in (two.parent / "train_log.jsonl").read_text().splitlines()]
    # Both workers hold byte-identical weights after every optimizer step.
    assert [r["replicas_equal"] for r in rows if "replicas_equal" in r] == [True] * 5
    assert [r["workers"] for r in rows if r.get("event") == "start"] == [2]
    # Each worker took 8 of each batch of 16; together they took the step one worker takes.
    np.testing.assert_allclose(loss_rows(two.parent / "train_log.jsonl"),
                               loss_rows(one.parent / "train_log.jsonl"), rtol=1e-4)
    a = torch.load(one.parent / "checkpoint/state.pt", weights_only=False)["model"]
    b = torch.load(two.parent / "checkpoint/state.pt", weights_only=False)["model"]
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-4, atol=1e-5)
    assert json.loads((two.parent / "summary.json").read_text())["workers"] == 2


# ---------------------------------------------------------------------------------------
# `ray job submit` to a local cluster

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_ray_job_writes_a_checkpoint_and_a_rerun_resumes_from_it(tmp_path):
    mini = require(DATA_ROOT / "mathlib-src-mini")
    ray_bin = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
    # Ray's token authentication, as a cluster of ours would run it: one token for the cluster,
    # the submitting client and (inherited from the cluster) the job's driver.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": os.urandom(16).hex()}
    env.pop("RAY_ADDRESS", None)
    port = _free_port()
    temp = Path("/tmp") / f"rayjob-{os.getpid()}"  # Ray's socket paths must stay short
    subprocess.run([ray_bin, "start", "--head", "--num-cpus=3", f"--dashboard-port={port}",
                    "--include-dashboard=true", f"--temp-dir={temp}", "--disable-usage-stats"],
                   env=env, check=True, capture_output=True, timeout=180)
    run_dir = tmp_path / "run"
    common = ["python", "-m", "prover.cli", "retriever", "pretrain", "--config", TINY, f"data.root={mini}",
              f"run_dir={run_dir}", "device=cpu", "tokenizer.vocab_size=1000", "pretrain.max_steps=6",
              "pretrain.eval_fraction=0.01", "trainer.workers=2"]

    def submit(*extra: str) -> None:
        out = subprocess.run([ray_bin, "job", "submit", f"--address=http://127.0.0.1:{port}",
                              "--runtime-env-json", json.dumps({"env_vars": {"PYTHONPATH": str(REPO)}}),
                              "--", *common, *extra],
                             env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]

    try:
        submit("pretrain.max_minutes=0.001")  # stopped by its budget after the first step
        state = torch.load(run_dir / "pretrain/checkpoint/state.pt", weights_only=False)
        stopped_at = state["progress"]["step"]
        assert 1 <= stopped_at < 6 and not state["progress"]["done"]
        submit()  # the same command without the budget: resumes, finishes
    finally:
        subprocess.run([ray_bin, "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)
    rows = [json.loads(line) for line in (run_dir / "pretrain/train_log.jsonl").read_text().splitlines()]
    starts = [r for r in rows if r.get("event") == "start"]
    assert [(s["step"], s["workers"]) for s in starts] == [(0, 2), (stopped_at, 2)]
    steps = [r["step"] for r in rows if "loss" in r]
    assert sorted(steps) == steps and steps[-1] == 6
    summary = json.loads((run_dir / "pretrain/summary.json").read_text())
    assert summary["done"] and summary["steps"] == 6 and summary["workers"] == 2
    assert (run_dir / "pretrain/model/config.json").exists()
