"""Run one training stage on `trainer.workers` workers: here, or as Ray Train workers.

Why Ray Train (and not Accelerate or Lightning Fabric): proof search already runs on Ray,
and our users submit work with `ray job submit`. Ray Train starts one process per GPU, on
one machine or across the nodes of a cluster, sets up the process group (NCCL on GPUs, gloo
on CPUs) and places the workers, so the same command trains on a laptop, on all GPUs of one
machine, and as a job on a cluster, with no second launcher (torchrun, `accelerate launch`)
and no per-node set-up. The loop itself stays ours (`engine.fit`): one readable file, and a
one-worker run that is byte-for-byte the plain loop.

One worker trains in this process (no Ray at all). N workers: `start_ray()` joins the cluster
named by RAY_ADDRESS (which `ray job submit` sets) or starts a local one, and every worker runs
the same stage function; rank 0 evaluates, saves and writes the run directory, which on a
cluster must be on storage every node sees. The stage function's return value is rank 0's
files: callers read the run directory, as a rerun would.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from prover.training.settings import TrainerConfig
from prover.utils.ray_cluster import start_ray

log = logging.getLogger(__name__)


def _worker(config: dict[str, Any]) -> None:
    from prover.utils.logs import setup_logging
    setup_logging(config["verbose"])
    torch.set_num_threads(config["threads"])
    config["fn"](*config["args"])


def launch(fn: Callable[..., Any], *args: Any, trainer: TrainerConfig | None, run_dir: str | Path) -> Any:
    """`fn(*args)` in this process (one worker: returns its value), or on Ray Train workers
    (returns None once all finished; rank 0 has written the run directory)."""
    if trainer is None or trainer.workers <= 1:
        return fn(*args)
    import ray
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    use_gpu = torch.cuda.is_available() if trainer.use_gpu is None else trainer.use_gpu
    # $RAY_ADDRESS (inside `ray job submit`, or a cluster named by the user), else a local
    # cluster for this run, whose workers may share cores (gloo on a laptop).
    started = start_ray(num_cpus=max(os.cpu_count() or 1, trainer.workers * trainer.cpus_per_worker))
    storage = Path(trainer.storage_path or Path(run_dir) / "ray").resolve()
    log.info("training on %d Ray Train workers (%s); Ray's records in %s", trainer.workers,
             "GPUs, NCCL" if use_gpu else "CPU processes, gloo", storage)
    try:
        TorchTrainer(
            _worker,
            train_loop_config={"fn": fn, "args": args, "threads": trainer.cpus_per_worker,
                               "verbose": logging.getLogger().isEnabledFor(logging.DEBUG)},
            scaling_config=ScalingConfig(num_workers=trainer.workers, use_gpu=use_gpu,
                                         resources_per_worker={"CPU": trainer.cpus_per_worker}),
            torch_config=TorchConfig(backend="nccl" if use_gpu else "gloo"),
            # A failed worker fails the run; rerunning the command resumes from the checkpoint.
            run_config=RunConfig(name=Path(run_dir).name, storage_path=str(storage),
                                 failure_config=FailureConfig(max_failures=0)),
        ).fit()
    finally:
        if started:
            ray.shutdown()
    return None
