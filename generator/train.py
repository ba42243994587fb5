"""`prover generator train`: cross-entropy training of the tactic generator.

Inputs are the augmented pairs from `generator.data` (built on first use). Checkpoints go to
`<run_dir>/generator/checkpoint` and a rerun resumes there; validation (loss per target
byte, and exact match of the top beam against the recorded tactic) runs each epoch or every
`train.eval_every` steps, and the model with the lowest validation loss is kept in
`<run_dir>/generator/model` (`from_pretrained`-loadable).
"""
from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf

from prover.data.jsonio import write_json
from prover.utils.runinfo import git_commit
from prover.training.settings import recipe_of
from prover.training.engine import Stage, begin, fit
from prover.training.launch import launch
from prover.training.run import RunDir, length_grouped_order
from generator.data import build_split, load_pairs
from generator.inputs import normalize_tactic
from generator.model import TacticGenerator, frequent_targets, save_pool
from generator.neighbors import training_neighbors

log = logging.getLogger(__name__)


@torch.no_grad()
def validate(gen: TacticGenerator, inputs: list[str], tactics: list[str], batch_size: int,
             beams: int) -> dict[str, float]:
    """Mean loss per target byte, and the fraction whose top beam is the recorded tactic."""
    gen.model.eval()
    total, n_bytes = 0.0, 0
    for lo in range(0, len(inputs), batch_size):
        ins, tacs = inputs[lo: lo + batch_size], tactics[lo: lo + batch_size]
        lps = gen.tactic_logprobs(ins, tacs)
        total -= sum(lps)
        n_bytes += sum(len(gen._labels([t])[0]) for t in tacs)
    hits = 0
    if beams > 0:
        for sugg, tac in zip(gen.generate(inputs, num_tactics=beams, batch_size=batch_size), tactics):
            hits += bool(sugg) and normalize_tactic(sugg[0].tactic) == normalize_tactic(tac)
    gen.model.train()
    return {"loss": total / max(n_bytes, 1), "exact_match@1": hits / max(len(inputs), 1)}


def _subset(n: int, k: int, seed: int) -> np.ndarray:
    return np.arange(n) if k <= 0 or k >= n else np.sort(np.random.default_rng(seed).permutation(n)[:k])


class GeneratorStage(Stage):
    """Cross-entropy of the recorded tactic given the augmented input, batches of similar
    input lengths; validation loss per target byte keeps the best model."""

    label = "train generator"
    decay_1d, select, mode = True, "loss", "min"

    def __init__(self, cfg: Any, gen: TacticGenerator, inputs: list[str], tactics: list[str],
                 v_in: list[str], v_tac: list[str]) -> None:
        tc = cfg.train
        self.cfg, self.tc, self.gen, self.model = cfg, tc, gen, gen.model
        self.inputs, self.tactics, self.v_in, self.v_tac = inputs, tactics, v_in, v_tac
        self.lengths = [len(s.encode("utf-8")) for s in inputs]
        self.recipe = recipe_of(tc)

    def micro_batches(self, epoch: int) -> list[np.ndarray]:
        # Batches of similar input length: the encoder pads every input to its batch's longest.
        order = length_grouped_order(self.lengths, self.tc.batch_size, self.cfg.seed, epoch)
        bs = self.tc.batch_size
        return [order[lo: lo + bs] for lo in range(0, len(order), bs)]

    def batch(self, examples: np.ndarray, epoch: int, index: int) -> tuple[list[str], list[str]]:
        return [self.inputs[i] for i in examples], [self.tactics[i] for i in examples]

    def loss(self, batch: tuple[list[str], list[str]]) -> torch.Tensor:
        return self.gen.loss(*batch)

    def evaluate(self, extra: dict) -> dict[str, float]:
        if not self.v_in:
            return {}
        return validate(self.gen, self.v_in, self.v_tac, self.tc.batch_size, self.tc.eval_beams)

    def save(self, run: RunDir, metrics: dict[str, float]) -> None:
        self.gen.save_pretrained(run.model_dir)


def train_generator(cfg: Any) -> dict:
    """Train (or resume) under `cfg.run_dir/generator`; return the summary it writes.
    `trainer.workers` > 1 trains on Ray Train workers (prover/training/launch.py)."""
    build_split(cfg, cfg.train_split)  # the augmented pairs once, before any worker reads them
    build_split(cfg, cfg.val_split)
    launch(_train_generator, cfg, trainer=cfg.trainer, run_dir=Path(cfg.run_dir) / "generator")
    return json.loads((Path(cfg.run_dir) / "generator" / "summary.json").read_text())


def _train_generator(cfg: Any) -> None:
    tc = cfg.train
    workers, device = begin(cfg.seed, cfg.device)
    run = RunDir(Path(cfg.run_dir) / "generator")
    train_path, train_stats = build_split(cfg, cfg.train_split)
    val_path, _ = build_split(cfg, cfg.val_split)
    inputs, tactics = load_pairs(train_path)
    if not inputs:
        raise ValueError(f"{cfg.train_split} has no traced tactics to train on")
    v_in, v_tac = load_pairs(val_path)
    keep = _subset(len(v_in), tc.eval_examples, cfg.seed)
    v_in, v_tac = [v_in[i] for i in keep], [v_tac[i] for i in keep]

    gen = TacticGenerator.create(cfg.model, OmegaConf.to_object(cfg.input), device)
    gen.pool = frequent_targets(tactics, tc.pool_size) if tc.pool_size else []
    stage = GeneratorStage(cfg, gen, inputs, tactics, v_in, v_tac)
    log.info("generator: %d train / %d val pairs", len(inputs), len(v_in))
    result = fit(stage, run, device, workers, cfg.seed, cfg.trainer)
    if not workers.main:
        return
    progress = result.progress
    if gen.pool and run.model_dir.exists():  # also for a model saved before the pool existed
        save_pool(run.model_dir, gen.pool)
    if cfg.neighbors.k and run.model_dir.exists():
        training_neighbors(cfg).save(run.model_dir)
    summary = {"git_commit": git_commit(), "model": str(run.model_dir), "params": result.parameters,
               "train_split": cfg.train_split, "val_split": cfg.val_split, "train_pairs": len(inputs),
               "val_pairs": len(v_in), **result.record(), "epochs": progress.epoch, "done": progress.done,
               "workers": result.workers,
               "seconds": round(progress.seconds, 1), "cpu_seconds": round(progress.cpu_seconds, 1),
               "initial_val": progress.initial_val, "best_val_loss": progress.best_metric,
               "augment": train_stats, "config": OmegaConf.to_container(cfg, resolve=True)}
    write_json(run.path / "summary.json", summary)
    log.info("generator: %d steps; best val loss %.4f (initial %.4f); model in %s", progress.step,
             progress.best_metric or math.nan, (progress.initial_val or {}).get("loss", math.nan),
             run.model_dir)
