"""This process's place among the data-parallel workers of one training run.

Alone (no process group), it is rank 0 of 1 and every method is a no-op that returns its
input: a one-worker run does exactly what a plain loop does, so a one-thread CPU run stays
byte-for-byte reproducible. Under Ray Train (`launch.py`) the process group is already set
up (gloo on CPUs, NCCL on GPUs) and the methods are the few collectives the engine needs.

Gradients are summed by DistributedDataParallel around the stage's loss (`engine.StageLoss`),
with `find_unused_parameters` so that a parameter a step does not use is no hang; one that no
worker used keeps no gradient, as in a single process (AdamW then leaves it alone).
"""
from __future__ import annotations

import hashlib

import numpy as np
import torch
import torch.distributed as dist

from prover.utils.device import pick_device


class Workers:
    def __init__(self) -> None:
        self.distributed = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if self.distributed else 0
        self.world = dist.get_world_size() if self.distributed else 1

    @property
    def main(self) -> bool:
        """Rank 0: the one worker that evaluates, saves and writes the log."""
        return self.rank == 0

    def device(self, name: str) -> torch.device:
        """The device this worker trains on: `name` alone; under Ray Train, its own GPU."""
        if self.distributed and torch.cuda.is_available() and name in ("auto", "cuda"):
            from ray.train.torch import get_device
            return get_device()
        return pick_device(name)

    def shard(self, batch: np.ndarray) -> np.ndarray:
        """This worker's part of a global batch (every world-th example)."""
        return batch[self.rank::self.world] if self.world > 1 else batch

    def _reduce(self, values: list[float], op: dist.ReduceOp) -> list[float]:
        t = torch.tensor(values, dtype=torch.float64, device=self._comm_device())
        dist.all_reduce(t, op=op)
        return t.tolist()

    def _comm_device(self) -> torch.device:
        return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")

    def sum(self, value: float) -> float:
        return self._reduce([value], dist.ReduceOp.SUM)[0] if self.world > 1 else value

    def any(self, flag: bool) -> bool:
        """True on every worker when it is true on one (a budget stop ends all workers together)."""
        return bool(self._reduce([float(flag)], dist.ReduceOp.MAX)[0]) if self.world > 1 else flag

    def broadcast_weights(self, model: torch.nn.Module) -> None:
        """Every worker starts from rank 0's weights (and its resumed checkpoint)."""
        if self.world > 1:
            for t in model.state_dict().values():
                dist.broadcast(t, src=0)  # state_dict tensors share the parameters' storage

    def data_parallel(self, module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        """`module` under DistributedDataParallel (gloo on CPUs, NCCL on its GPU)."""
        from torch.nn.parallel import DistributedDataParallel
        return DistributedDataParallel(module, device_ids=[device] if device.type == "cuda" else None,
                                       find_unused_parameters=True)

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def replicas_equal(self, model: torch.nn.Module) -> bool:
        """Whether every worker holds byte-identical weights (a hash per worker, gathered)."""
        h = hashlib.sha1()
        for t in model.state_dict().values():
            h.update(t.detach().float().cpu().numpy().tobytes())
        if self.world == 1:
            return True
        hashes: list[str | None] = [None] * self.world
        dist.all_gather_object(hashes, h.hexdigest())
        return len(set(hashes)) == 1
