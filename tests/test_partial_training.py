"""A recipe is its steps; its time budget only guards them (issue 42). A run the budget stops is
marked partial in its summary.json, its log and every results row built on it (refused unless
--allow-partial), and a rerun with a larger budget resumes to the planned step and ends byte for
byte where an uninterrupted run ends, on one thread."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import DATA_ROOT, REPO, benchmark_script, require
from prover.config import load_config
from prover.training.engine import BEFORE_STOP, Recipe, Stage, fit
from prover.training.run import Budget, RunDir
from prover.utils.files import save_dir_atomically
from prover.training.workers import Workers
from prover.utils.runinfo import git_commit, partial_line, partial_training, require_full_training

pytestmark = pytest.mark.usefixtures("one_thread")


# ---------------------------------------------------------------------------------------
# The engine, on a toy stage: the stop at a known step, and the best model it must not keep

class ToyStage(Stage):
    """Least squares on fixed data, evaluated every `eval_every` steps. The kept model is the one
    whose loss is nearest `target` (the plain loss without one): set to step 5's loss, it makes
    a stop's own evaluation at step 6 a best model that an uninterrupted run (best: step 4)
    never had."""

    label = "toy"
    select, mode = "loss", "min"

    def __init__(self, max_minutes: float | None, target: float | None = None, eval_every: int = 4) -> None:
        self.target = target
        torch.manual_seed(0)
        self.model = torch.nn.Linear(4, 1)
        rng = np.random.default_rng(0)
        self.x = torch.tensor(rng.normal(size=(64, 4)), dtype=torch.float32)
        self.y = self.x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
        self.recipe = Recipe(lr=0.05, batch_size=8, epochs=2, warmup_steps=2, eval_every=eval_every,
                             max_minutes=max_minutes, log_every=1)

    def micro_batches(self, epoch: int) -> list[np.ndarray]:
        return np.array_split(np.random.default_rng([1, epoch]).permutation(64), 8)

    def batch(self, examples: np.ndarray, epoch: int, index: int):
        return self.x[examples], self.y[examples]

    def loss(self, batch) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.model(x), y)

    def evaluate(self, extra: dict) -> dict[str, float]:
        with torch.no_grad():
            loss = float(self.loss((self.x, self.y)))
        return {"loss": loss if self.target is None else abs(loss - self.target)}

    def save(self, run: RunDir, metrics: dict[str, float]) -> None:
        save_dir_atomically(run.model_dir, lambda tmp: torch.save(self.model.state_dict(), tmp / "w.pt"))


def _toy(run_dir: Path, max_minutes: float | None, stop_at: int | None, monkeypatch, **toy):
    real = Budget.exhausted
    if stop_at is not None:  # the budget runs out at a known step, whatever this machine's speed
        monkeypatch.setattr(Budget, "exhausted", lambda self: real(self) or self.progress.step >= stop_at)
    try:
        return fit(ToyStage(max_minutes, **toy), RunDir(run_dir), torch.device("cpu"), Workers(), 0)
    finally:
        monkeypatch.setattr(Budget, "exhausted", real)


def _bytes(run_dir: Path) -> bytes:
    return (run_dir / "model/w.pt").read_bytes()


def test_a_budget_stop_is_partial_and_its_resume_equals_an_uninterrupted_run(tmp_path, monkeypatch):
    every = _toy(tmp_path / "every", None, None, monkeypatch, eval_every=1)
    target = {e["step"]: e["loss"] for e in every.progress.evaluations}[5]
    whole = _toy(tmp_path / "whole", None, None, monkeypatch, target=target)
    assert (whole.stopped_by, whole.progress.step, whole.total_steps) == ("end", 16, 16)
    assert whole.progress.best_step == 4
    stopped = _toy(tmp_path / "cut", 10.0, 6, monkeypatch, target=target)
    assert stopped.record() == {"stopped_by": "budget", "steps": 6, "planned_steps": 16, "partial": True,
                                "git_commit": git_commit()}
    # The stop evaluated step 6 and kept it (nearer target than step 4); step 4's is set aside.
    assert (tmp_path / "cut" / BEFORE_STOP).exists() and stopped.progress.best_step == 6
    stop = [json.loads(x) for x in (tmp_path / "cut/train_log.jsonl").read_text().splitlines()][-1]
    assert (stop["event"], stop["step"], stop["planned_steps"], stop["partial"]) == ("stop", 6, 16, True)
    resumed = _toy(tmp_path / "cut", None, None, monkeypatch, target=target)
    assert (resumed.stopped_by, resumed.progress.step, resumed.progress.attempts) == ("end", 16, 2)
    assert not (tmp_path / "cut" / BEFORE_STOP).exists()
    assert resumed.progress.best_step == whole.progress.best_step
    assert _bytes(tmp_path / "cut") == _bytes(tmp_path / "whole")
    a = torch.load(tmp_path / "cut/checkpoint/state.pt", weights_only=False)
    b = torch.load(tmp_path / "whole/checkpoint/state.pt", weights_only=False)
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in b["model"])
    assert a["optimizer"]["state"][0]["step"] == b["optimizer"]["state"][0]["step"] == 16


def test_results_refuse_a_partial_model_unless_allowed():
    summaries = {"pretrain": {"stopped_by": "end", "steps": 9, "planned_steps": 9},
                 "cfr": {"stopped_by": "budget", "steps": 4267, "planned_steps": 4992},
                 "old": {"done": False, "steps": 2675}, "missing": None}
    assert partial_training(summaries) == {
        "cfr": "partial: stopped by its budget at step 4267 of 4992",
        "old": "partial: stopped by its budget at step 2675 of an unrecorded number"}
    with pytest.raises(SystemExit) as refused:
        require_full_training(summaries, allow_partial=False)
    assert str(refused.value).startswith("error: a partial model (cfr partial: stopped by its budget at step 4267")
    assert "--allow-partial" in str(refused.value)
    assert require_full_training(summaries, allow_partial=True) == partial_training(summaries)
    assert partial_line(summaries["pretrain"], "pretrain") == ""
    assert partial_line(summaries["cfr"], "cfr").startswith("PARTIAL model (partial: stopped by its budget at step 4267")


# ---------------------------------------------------------------------------------------
# The acceptance test: the tiny generator recipe with its budget below its steps

STEPS = 12
SHRINK = ["device=cpu", "seed=42", f"train.max_steps={STEPS}", "train.batch_size=8", "train.eval_every=4",
          "train.eval_examples=8", "train.eval_beams=1", "train.log_every=2", "train.warmup_steps=2",
          "train.checkpoint_every=1000", "input.max_bytes=256", "model.num_layers=1", "model.num_decoder_layers=1"]


def _generator(run_dir: Path, *extra: str) -> dict:
    from generator.settings import GeneratorTrainConfig
    from generator.train import train_generator
    mini = require(DATA_ROOT / "mathlib-src-mini")
    return train_generator(load_config(GeneratorTrainConfig, str(REPO / "configs/generator/tiny.yaml"),
                                       [f"data.root={mini}", f"run_dir={run_dir}", *SHRINK, *extra]))


def _weights(run_dir: Path) -> bytes:
    return (run_dir / "generator/model/model.safetensors").read_bytes()


def test_tiny_generator_stopped_by_its_budget_is_partial_then_resumes_to_an_uninterrupted_run(tmp_path, monkeypatch):
    whole = _generator(tmp_path / "whole")
    assert (whole["stopped_by"], whole["steps"], whole["planned_steps"], whole["partial"]) == ("end", STEPS, STEPS, False)
    # A budget of 0.01 CPU-seconds, spent before the planned steps on any machine; its check is
    # held until step 6, so the stop lands mid-run (between evaluations) however fast this one is.
    real = Budget.exhausted
    monkeypatch.setattr(Budget, "exhausted", lambda self: real(self) and self.progress.step >= 6)
    shutil.copytree(tmp_path / "whole/data", tmp_path / "cut/data")  # the same pairs, built once
    cut = _generator(tmp_path / "cut", "train.max_minutes=0.0002")
    monkeypatch.setattr(Budget, "exhausted", real)
    assert (cut["stopped_by"], cut["steps"], cut["planned_steps"], cut["partial"], cut["done"]) == (
        "budget", 6, STEPS, True, False)

    # A results row built on it: refused, or with --allow-partial marked partial.
    bench = benchmark_script("tactic_generator")
    mini = require(DATA_ROOT / "mathlib-src-mini")
    args = ["--allow-dirty", "--config", str(REPO / "configs/generator/benchmark_mini.yaml"),
            f"model={tmp_path / 'cut/generator/model'}", f"data.root={mini}", f"results_dir={tmp_path / 'results'}",
            "conditions=[none]", "max_examples=3", "throughput_states=1", "num_tactics=2"]
    with pytest.raises(SystemExit) as refused:
        bench.main(args)
    assert f"partial: stopped by its budget at step {cut['steps']} of {STEPS}" in str(refused.value)
    bench.main(["--allow-partial", *args])
    result = json.loads(next((tmp_path / "results").glob("generator-*.json")).read_text())
    note = f"partial: stopped by its budget at step {cut['steps']} of {STEPS}"
    assert [(r["condition"], r["partial"]) for r in result["rows"]] == [("none", note)]
    assert f"| none ({note}) |" in bench.markdown(result)

    # The rerun without the guard resumes to the planned step: the uninterrupted run's model.
    done = _generator(tmp_path / "cut")
    assert (done["stopped_by"], done["steps"], done["partial"]) == ("end", STEPS, False)
    starts = [json.loads(x) for x in (tmp_path / "cut/generator/train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in starts if r.get("event") == "start"] == [0, cut["steps"]]
    assert done["best_val_loss"] == whole["best_val_loss"]
    assert _weights(tmp_path / "cut") == _weights(tmp_path / "whole")


def test_every_benchmark_refuses_a_partial_model_before_any_work(tmp_path):
    from retriever.evaluation.benchmark import row_label
    note = "partial: stopped by its budget at step 3 of 9"
    assert row_label({"retriever": "cfr", "partial": {"cfr": note}}) == f"cfr (cfr {note})"
    model = tmp_path / "generator/model"
    model.mkdir(parents=True)
    (model.parent / "summary.json").write_text(json.dumps({"stopped_by": "budget", "steps": 3, "planned_steps": 9}))
    replay = benchmark_script("search_replay")
    with pytest.raises(SystemExit) as refused:
        replay.main(["--allow-dirty", "--config", str(REPO / "configs/search/replay_real.yaml"),
                     "--results-dir", str(tmp_path / "results"), f"generator.model={model}"])
    assert f"generator {note}" in str(refused.value) and not (tmp_path / "results").exists()


def test_prover_benchmark_refuses_a_partial_generator_and_marks_an_allowed_one(tmp_path):
    from prover.cli import main
    from prover.commands.benchmark import generator_partial
    from prover.search.results import markdown
    note = "partial: stopped by its budget at step 3 of 9"
    model = tmp_path / "generator/model"
    model.mkdir(parents=True)
    (model.parent / "summary.json").write_text(json.dumps({"stopped_by": "budget", "steps": 3, "planned_steps": 9}))
    with pytest.raises(SystemExit) as refused:  # before Ray, Lean or any model is touched
        main(["benchmark", "--env", "replay", "--generator", str(model), "--out", str(tmp_path / "out")])
    assert f"generator {note}" in str(refused.value) and "--allow-partial" in str(refused.value)
    assert not (tmp_path / "out").exists()
    assert generator_partial(str(model), allow_partial=True) == {"generator": note}
    assert generator_partial(str(tmp_path / "elsewhere/model"), allow_partial=False) == {}
    said = markdown({"runs": {}, "partial": {"generator": note}})
    assert f"PARTIAL models: generator {note}" in said
