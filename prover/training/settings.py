"""`trainer:` in every training config: how many workers train one stage, and where."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainerConfig:
    # 1: train in this process. N > 1: N Ray Train workers, data-parallel: one per GPU where
    # there are GPUs (NCCL), else N CPU processes (gloo). Batch sizes are global (split over
    # the workers), so a recipe trains the same on 1 or 8 workers; only the speed changes.
    workers: int = 1
    use_gpu: bool | None = None  # None: when CUDA is there (the driver's machine decides)
    cpus_per_worker: int = 1
    # After every optimizer step, check that every worker holds the same weights (a hash of
    # every parameter, gathered): a debugging aid, logged as `replicas_equal` on each row.
    check_replicas: bool = False
    # Where Ray Train keeps its own run records (None: <run dir of the stage>/ray). Checkpoints
    # and models go to the stage's run_dir, which on a cluster must be storage every node sees.
    storage_path: str | None = None
