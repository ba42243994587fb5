"""What every timed GPU lease measures its training against (issues 54 and 64).

A lease has minutes of one chip: its rate is reported against the chip's own. `matmul_ceiling`
times a large bf16 matrix product in the same process (the ceiling), `count_flops` counts a
step's FLOPs (forward and backward) with PyTorch's counter, and their ratio is the share of the
bf16 matrix rate a step reaches. `autocast` is bf16 autocast on CUDA, and on a CPU too when asked
(the rehearsals run the same path). The generator's lease (generator/lease_train.py) and the
retriever's (retriever/training/lease.py) both use these.
"""
from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable

import torch

log = logging.getLogger(__name__)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bf16_ok(device: torch.device) -> bool:
    """Whether bf16 autocast runs natively here; a CPU without bf16 instructions would emulate
    it, and the step then falls back to fp32 (logged once)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    ok = bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    if not ok and not getattr(bf16_ok, "warned", False):
        bf16_ok.warned = True
        log.warning("bf16 autocast: this CPU has no bf16 instructions, so the step runs in fp32")
    return ok


def autocast(device: torch.device, enabled: bool) -> contextlib.AbstractContextManager:
    if not enabled or device.type not in ("cuda", "cpu") or not bf16_ok(device):
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def matmul_ceiling(device: torch.device, n: int | None = None, reps: int = 10) -> dict:
    """TFLOP/s of an n x n x n bf16 matrix product on `device` (mean of `reps` after 3 warm-ups):
    the ceiling a training step's share is measured against. 8192 on a GPU (KINDS.md's
    measurement), 256 on a CPU (only that the path runs)."""
    n = n or (8192 if device.type == "cuda" else 256)
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    seconds = (time.perf_counter() - t0) / reps
    return {"n": n, "dtype": "bf16", "tflops": round(2 * n ** 3 / seconds / 1e12, 6), "reps": reps}


def count_flops(loss_fn: Callable[[], torch.Tensor]) -> int:
    """FLOPs of `loss_fn()`'s forward and of its backward (PyTorch's counter; an optimizer's few
    FLOPs per parameter are left out). The caller zeroes the gradients it leaves."""
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with counter:
        loss_fn().backward()
    return int(counter.get_total_flops())


def planned_steps(examples_per_s: float, seconds: float, batch_size: int, n_pairs: int, epochs: float) -> int:
    """The steps `seconds` of training at the measured rate allow, at most `epochs` of the pairs."""
    by_time = int(examples_per_s * seconds / batch_size)
    by_epochs = math.ceil(epochs * n_pairs / batch_size) if epochs > 0 else by_time
    return max(1, min(by_time, by_epochs))
