"""The training settings: a stage's recipe (how it optimizes) and `trainer:` (how many workers
train one stage, and where)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from omegaconf import OmegaConf

from prover.config import DataConfig


@dataclass
class TrainerConfig:
    # 1: train in this process. N > 1: N Ray Train workers, data-parallel: one per GPU where
    # there are GPUs (NCCL), else N CPU processes (gloo). Batch sizes are global (split over
    # the workers), so a step averages the same examples' gradients on 1 or 8 workers. Not the
    # same: a loss that looks across its micro-batch, as CFR's in-batch negatives do, sees
    # only its worker's share of it (see CFRConfig.batch_size).
    workers: int = 1
    use_gpu: bool | None = None  # None: when CUDA is there (the driver's machine decides)
    cpus_per_worker: int = 1
    # After every optimizer step, check that every worker holds the same weights (a hash of
    # every parameter, gathered): a debugging aid, logged as `replicas_equal` on each row.
    check_replicas: bool = False
    # Where Ray Train keeps its own run records (None: <run dir of the stage>/ray). Checkpoints
    # and models go to the stage's run_dir, which on a cluster must be storage every node sees.
    storage_path: str | None = None


@dataclass
class TrainRunConfig:
    """What every training config (retriever, generator) starts with; each adds its stages."""

    data: DataConfig = field(default_factory=DataConfig)
    run_dir: str = "runs/train"  # every stage's folder (checkpoint, log, summary, model) lives here
    seed: int = 42
    device: str = "auto"
    train_split: str = "random/train"
    val_split: str = "random/val"
    trainer: TrainerConfig = field(default_factory=TrainerConfig)  # workers: prover/training/


@dataclass
class Recipe:
    """How a stage optimizes: the one recipe section. Every stage's settings extend it (so the
    YAML keys stay flat: `cfr.lr`, `car.grad_accum`, `train.epochs`), each with its own defaults,
    and `engine.fit` reads the stage's settings as they are. Batch sizes are global: split over
    the workers (see TrainerConfig for what that keeps and what it does not)."""

    lr: float = 1e-4
    batch_size: int = 8
    grad_accum: int = 1  # micro-batches summed into one optimizer step
    epochs: int = 1
    max_steps: int | None = None  # optimizer steps in all (a linear schedule ends here); None: epochs
    max_minutes: float | None = None  # training budget over all attempts: CPU minutes on a CPU, wall minutes on a GPU
    weight_decay: float = 0.0
    warmup_steps: int = 0
    grad_clip: float = 1.0  # the gradient's largest norm
    log_every: int = 50
    checkpoint_every: int = 500
    eval_every: int = 0  # optimizer steps between evaluations (0: each epoch; -1: never)


def recipe_of(settings: Any, **changes: Any) -> Recipe:
    """A stage's settings (a Recipe's subclass, or its config node) as the object `fit` reads,
    with the `changes` its stage makes (none to evaluate without validation data, say)."""
    obj = OmegaConf.to_object(settings) if OmegaConf.is_config(settings) else settings
    return replace(obj, **changes) if changes else obj
