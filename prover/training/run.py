"""What every training run here shares: seeds, bf16 autocast, checkpoints that resume, a JSONL log,
and a wall-clock budget.

A run directory holds `checkpoint/` (model, optimizer, scheduler, RNG states, progress),
`train_log.jsonl` (one line per logged step or evaluation) and, at the end, `model/` in
Hugging Face format. Killing a run and starting the same command again continues from the
last checkpoint; the budget counts the time of every attempt, so a 45-minute budget stays 45
minutes however often a run was interrupted.
"""
from __future__ import annotations

import contextlib
import json
import logging
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prover.utils.files import save_dir_atomically

log = logging.getLogger(__name__)


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def mixed_precision(device: torch.device) -> contextlib.AbstractContextManager:
    """bf16 autocast for forward passes on CUDA (as ReProver trains: bf16-mixed); nothing on a
    CPU, where bf16 matmuls are slower than fp32 on most cores. Losses are computed outside it,
    in fp32: a contrastive loss divides by a temperature of 0.02-0.05."""
    return (torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda"
            else contextlib.nullcontext())


@dataclass
class Progress:
    """How far a run got; saved in every checkpoint."""

    step: int = 0  # optimizer steps taken
    epoch: int = 0
    batch_in_epoch: int = 0  # batches of the current epoch already consumed
    seconds: float = 0.0  # training wall time over all attempts
    cpu_seconds: float = 0.0  # CPU time of the training process over all attempts (all threads)
    best_metric: float | None = None
    done: bool = False
    attempts: int = 0  # runs of the stage that trained (a resumed run is the next attempt)
    best_step: int | None = None  # the step whose model `model/` holds (stages that select one)
    budget_stop: int | None = None  # set only in the checkpoint a budget stop saves: its step
    last_eval_step: int | None = None
    initial_val: dict[str, float] | None = None  # the untrained model's validation metrics
    last_val: dict[str, float] | None = None
    evaluations: list[dict[str, Any]] = field(default_factory=list)  # {step, epoch, metrics...}
    train_loss: float | None = None  # the last logged window's mean training loss
    excluded_seconds: float = 0.0  # time not counted as training (validation passes)
    extra: dict[str, Any] = field(default_factory=dict)  # a stage's own state, if it keeps any

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> Progress:
        """A checkpoint's progress; one from before the typed fields kept them in `extra`."""
        saved = dict(saved)
        extra = dict(saved.pop("extra", None) or {})
        names = set(cls.__dataclass_fields__)
        moved = {k: extra.pop(k) for k in list(extra) if k in names}
        return cls(**{**moved, **saved}, extra=extra)


class Budget:
    """Stops training after `max_minutes` of accumulated training time (None: no limit).

    On a GPU the clock is wall time. On a CPU it is the process's CPU time: a budget of 45
    minutes then means 45 CPU-minutes whatever else shares the machine, so rows trained side
    by side, or beside other work, still get the same compute.
    """

    def __init__(self, progress: Progress, max_minutes: float | None, clock: str = "auto") -> None:
        self.progress = progress
        self.max_seconds = None if max_minutes is None else 60.0 * max_minutes
        if clock == "auto":
            clock = "wall" if torch.cuda.is_available() else "cpu"
        self.clock = clock
        self._since = time.perf_counter()
        self._cpu_since = time.process_time()

    def tick(self) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        self.progress.seconds += now - self._since
        self.progress.cpu_seconds += cpu - self._cpu_since
        self._since, self._cpu_since = now, cpu

    @property
    def used(self) -> float:
        return self.progress.cpu_seconds if self.clock == "cpu" else self.progress.seconds

    def exhausted(self) -> bool:
        self.tick()
        return self.max_seconds is not None and self.used >= self.max_seconds

    @contextlib.contextmanager
    def excluded(self) -> Iterator[None]:
        """Time spent inside is not training (validation passes over the whole corpus): the
        budget does not count it, `progress.excluded_seconds` records it."""
        self.tick()
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.progress.excluded_seconds = round(self.progress.excluded_seconds + time.perf_counter() - t0, 1)
            self._since, self._cpu_since = time.perf_counter(), time.process_time()


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.checkpoint = self.path / "checkpoint"
        self.model_dir = self.path / "model"
        self.log_path = self.path / "train_log.jsonl"

    def finished(self) -> bool:
        """Whether a run here ended (its checkpoint says done, and its model is saved); read
        without loading the weights and optimizer state."""
        state = self.checkpoint / "state.pt"
        if not state.exists() or not (self.model_dir / "config.json").exists():
            return False
        return bool(torch.load(state, map_location="cpu", weights_only=False, mmap=True)["progress"]["done"])

    def log(self, **row: Any) -> None:
        row = {"time": round(time.time(), 3), **row}  # ms: rates are read off short windows
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    def save_checkpoint(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                        scheduler: Any, progress: Progress) -> None:
        save_dir_atomically(self.checkpoint, lambda tmp: torch.save({
            "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict() if scheduler is not None else None,
            "progress": asdict(progress),
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                    "torch": torch.get_rng_state(),
                    "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
        }, tmp / "state.pt"))

    def load_checkpoint(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                        scheduler: Any) -> Progress | None:
        path = self.checkpoint / "state.pt"
        if not path.exists():
            return None
        state = torch.load(path, map_location="cpu", weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if scheduler is not None and state["scheduler"] is not None:
            scheduler.load_state_dict(state["scheduler"])
        random.setstate(state["rng"]["python"])
        np.random.set_state(state["rng"]["numpy"])
        torch.set_rng_state(state["rng"]["torch"])
        if state["rng"].get("cuda") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])
        progress = Progress.from_dict(state["progress"])
        log.info("resumed %s at step %d (epoch %d, %.0f s trained)", self.path, progress.step,
                 progress.epoch, progress.seconds)
        return progress


def epoch_order(n: int, seed: int, epoch: int) -> np.ndarray:
    """The example order of an epoch, a function of (seed, epoch) only, so a resumed run
    sees exactly the batches it would have seen."""
    return np.random.default_rng(seed + 1000 * epoch).permutation(n)


def length_grouped_order(lengths: Sequence[int], batch_size: int, seed: int, epoch: int,
                         group_batches: int = 64) -> np.ndarray:
    """`epoch_order`, with each run of `group_batches` batches sorted by length so a batch pads
    to similar lengths (the batches of a run are then shuffled): on a CPU padding is paid in
    full. Still a function of (seed, epoch) only."""
    lengths = np.asarray(lengths)
    order = epoch_order(len(lengths), seed, epoch)
    rng = np.random.default_rng([seed, epoch, 1])
    span = batch_size * group_batches
    out = []
    for lo in range(0, len(order), span):
        chunk = order[lo: lo + span]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches = [chunk[i: i + batch_size] for i in range(0, len(chunk), batch_size)]
        out.extend(batches[i] for i in rng.permutation(len(batches)))
    return np.concatenate(out) if out else order
