"""The generator's training step at full speed, for a timed GPU lease (issue 54).

`prover generator train` goes through the shared engine (checkpoints, resumable schedules, a loss
read back every step). A lease has minutes and one chip, so its loop is this lean one:
- batches of similar input length (the encoder pads each to its longest), padded to a multiple
  of `pad_multiple` (fewer distinct shapes for the kernels and for `torch.compile`);
- bf16 autocast (on a CPU too, when asked: the rehearsal runs the same path);
- the attention path by name: transformers' `sdpa` passes T5's relative position bias to
  `scaled_dot_product_attention` as an additive mask, `eager` is the plain matmul-softmax;
- fused AdamW (one kernel for all parameters), gradient clipping over all of them at once;
- `torch.compile` of the model when asked;
- no host sync inside the loop: losses are summed on the device and read at each log.

Throughput is measured against the chip (prover/training/lease.py, shared with the retriever's
lease): `matmul_ceiling` times a large bf16 matrix product in the same process, `step_flops`
counts one step's FLOPs (forward and backward) with PyTorch's FLOP counter, and their ratio is the
share of the bf16 matrix rate a step reaches.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from generator.model import TacticGenerator
from prover.training.lease import autocast, bf16_ok, count_flops, matmul_ceiling, planned_steps, sync  # noqa: F401  (callers import these from here)
from prover.training.run import length_grouped_order

log = logging.getLogger(__name__)

ATTENTIONS = ("sdpa", "eager")


@dataclass(frozen=True)
class StepVariant:
    """One way of running the training step (what the lease's `variants` list names)."""

    attention: str = "sdpa"
    compile: bool = False
    autocast: bool = True
    fused_adamw: bool = True

    @property
    def name(self) -> str:
        return f"{self.attention}{'+compile' if self.compile else ''}{'' if self.autocast else '+fp32'}"


def set_attention(model: Any, attention: str) -> None:
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, not {attention!r}")
    model.set_attn_implementation(attention)


class Batches:
    """Training batches of (inputs, tactics) as tensors: similar input lengths per batch, padded
    to a multiple of `pad_multiple`; the same order for the same (seed, epoch)."""

    def __init__(self, gen: TacticGenerator, inputs: Sequence[str], tactics: Sequence[str], batch_size: int,
                 seed: int, bucket: bool = True, pad_multiple: int = 8) -> None:
        self.gen, self.inputs, self.tactics = gen, inputs, tactics
        self.batch_size, self.seed, self.bucket, self.pad_multiple = batch_size, seed, bucket, pad_multiple
        self.lengths = [len(s.encode("utf-8")) for s in inputs]

    def order(self, epoch: int) -> list[np.ndarray]:
        if self.bucket:
            order = length_grouped_order(self.lengths, self.batch_size, self.seed, epoch)
        else:
            order = np.random.default_rng([self.seed, epoch]).permutation(len(self.inputs))
        bs = self.batch_size
        return [order[lo: lo + bs] for lo in range(0, len(order), bs)]

    def _pad(self, t: torch.Tensor, value: int) -> torch.Tensor:
        m = self.pad_multiple
        extra = (-t.shape[1]) % m if m > 1 else 0
        return torch.nn.functional.pad(t, (0, extra), value=value) if extra else t

    def tensors(self, idx: Sequence[int], device: torch.device) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        gen = self.gen
        enc = gen._tokenize([self.inputs[i] for i in idx], gen.max_input_tokens)
        enc = {"input_ids": self._pad(enc["input_ids"], 0), "attention_mask": self._pad(enc["attention_mask"], 0)}
        lab = gen._tokenize([self.tactics[i] for i in idx], gen.input_cfg.max_target_bytes + 1)
        labels = lab["input_ids"].clone()
        labels[lab["attention_mask"] == 0] = -100
        labels = self._pad(labels, -100)
        nb = device.type == "cuda"
        return {k: v.to(device, non_blocking=nb) for k, v in enc.items()}, labels.to(device, non_blocking=nb)


class Trainer:
    """One model, its optimizer and schedule, and the step as `variant` says."""

    def __init__(self, gen: TacticGenerator, variant: StepVariant, lr: float, warmup_steps: int, total_steps: int,
                 weight_decay: float = 0.0, grad_clip: float = 1.0) -> None:
        from transformers import get_linear_schedule_with_warmup
        self.gen, self.variant, self.grad_clip = gen, variant, grad_clip
        self.device = gen.device
        set_attention(gen.model, variant.attention)
        self.params = [p for p in gen.model.parameters() if p.requires_grad]
        self.fused = False
        kwargs = {"lr": lr, "weight_decay": weight_decay}
        if variant.fused_adamw:
            try:
                self.opt = torch.optim.AdamW(self.params, fused=True, **kwargs)
                self.fused = True
            except (RuntimeError, TypeError) as e:  # a device without the fused kernel
                log.warning("fused AdamW unavailable on %s (%s): the foreach one instead", self.device, e)
        if not self.fused:
            self.opt = torch.optim.AdamW(self.params, **kwargs)
        self.sched = get_linear_schedule_with_warmup(self.opt, min(warmup_steps, total_steps), max(total_steps, 1))
        self.forward: Callable = gen.model
        if variant.compile:
            self.forward = torch.compile(gen.model, dynamic=True)
        gen.model.train()

    def loss(self, enc: dict[str, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
        with autocast(self.device, self.variant.autocast):
            return self.forward(**enc, labels=labels).loss

    def step(self, enc: dict[str, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
        loss = self.loss(enc, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, self.grad_clip, foreach=self.device.type == "cuda")
        self.opt.step()
        self.sched.step()
        self.opt.zero_grad(set_to_none=True)
        return loss.detach()


def step_flops(trainer: Trainer, enc: dict[str, torch.Tensor], labels: torch.Tensor) -> int:
    """FLOPs of one training step's forward and backward on this batch (PyTorch's counter; the
    optimizer's few FLOPs per parameter are left out). Counted on the eager model: the counter
    does not see inside a compiled graph, and compiling changes no FLOP count."""
    def loss() -> torch.Tensor:
        with autocast(trainer.device, trainer.variant.autocast):
            return trainer.gen.model(**enc, labels=labels).loss
    flops = count_flops(loss)
    trainer.opt.zero_grad(set_to_none=True)
    return flops


def probe(gen: TacticGenerator, variant: StepVariant, batches: Batches, picks: Sequence[np.ndarray],
          ceiling_tflops: float | None, lr: float = 1e-4) -> dict:
    """Examples/s and the share of the bf16 rate of `variant`'s step on `picks` (two warm-up
    batches, then the rest timed); FLOPs counted on the timed batches."""
    device = gen.device
    trainer = Trainer(gen, variant, lr, 0, 10 ** 6)
    data = [batches.tensors(b, device) for b in picks]
    t0 = time.perf_counter()
    for enc, labels in data[:2]:
        trainer.step(enc, labels)
    sync(device)
    warm = time.perf_counter() - t0
    flops = sum(step_flops(trainer, enc, labels) for enc, labels in data[2:])
    sync(device)
    t0 = time.perf_counter()
    for enc, labels in data[2:]:
        trainer.step(enc, labels)
    sync(device)
    seconds = time.perf_counter() - t0
    n = sum(len(b) for b in picks[2:])
    row = {"variant": variant.name, "fused_adamw": trainer.fused, "examples_per_s": round(n / seconds, 1),
           "warmup_s": round(warm, 2), "tflops": round(flops / seconds / 1e12, 6),
           "flops_per_example": round(flops / max(n, 1))}
    if ceiling_tflops:
        row["share_of_bf16_rate"] = round(row["tflops"] / ceiling_tflops, 4)
    return row


def probe_picks(batches: Batches, steps: int) -> list[np.ndarray]:
    """`steps` + 2 batches spread over an epoch's length-grouped order: as training draws them
    (random batches would all pad to a long input)."""
    order = batches.order(0)
    picks = np.linspace(0, len(order) - 1, steps + 2).astype(int)
    return [order[i] for i in picks]


def train_timed(gen: TacticGenerator, variant: StepVariant, batches: Batches, steps: int, seconds: float,
                lr: float, warmup_steps: int, log_every: int = 50, weight_decay: float = 0.0,
                on_log: Callable[[dict], None] | None = None) -> dict:
    """`steps` optimizer steps (the linear schedule ends there), stopped early by the guard
    `seconds`; what happened, with examples/s over the whole run."""
    device = gen.device
    trainer = Trainer(gen, variant, lr, warmup_steps, steps, weight_decay)
    t0 = time.perf_counter()
    total, window, win_steps, step, epoch, examples = None, None, 0, 0, 0, 0
    stopped_by = "end"
    log_rows: list[dict] = []
    while step < steps:
        for idx in batches.order(epoch):
            if step >= steps:
                break
            if time.perf_counter() - t0 > seconds:
                stopped_by = "budget"
                break
            loss = trainer.step(*batches.tensors(idx, device))
            window = loss if window is None else window + loss
            step += 1
            win_steps += 1
            examples += len(idx)
            if step % log_every == 0 or step == steps:
                row = {"step": step, "epoch": epoch, "loss": round(float(window) / win_steps, 5),
                       "seconds": round(time.perf_counter() - t0, 2), "lr": trainer.sched.get_last_lr()[0]}
                log_rows.append(row)
                if on_log:
                    on_log(row)
                total = row["loss"]
                window, win_steps = None, 0
        if stopped_by == "budget":
            break
        epoch += 1
    if window is not None:
        total = round(float(window) / win_steps, 5)
    sync(device)
    elapsed = time.perf_counter() - t0
    gen.model.eval()
    return {"steps": step, "planned_steps": steps, "stopped_by": stopped_by, "partial": step < steps,
            "seconds": round(elapsed, 2), "examples": examples, "examples_per_s": round(examples / max(elapsed, 1e-9), 1),
            "final_train_loss": total, "variant": variant.name, "fused_adamw": trainer.fused, "log": log_rows}
