"""The lease's training loop (generator/lease_train.py): batches, plan, guard, throughput row."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from generator.lease_train import (Batches, StepVariant, matmul_ceiling, planned_steps, probe, probe_picks,
                                   set_attention, train_timed)
from generator.model import TacticGenerator, fresh_model
from generator.settings import InputConfig, ModelConfig

TINY = ModelConfig(d_model=32, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=2, d_kv=16, dropout=0.0)


@pytest.fixture()
def gen() -> TacticGenerator:
    torch.manual_seed(0)
    return TacticGenerator(fresh_model(TINY), InputConfig(max_bytes=96, max_target_bytes=16))


def _pairs(n: int = 64) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(0)
    inputs = ["h : x = 1\n" * int(rng.integers(1, 8)) + f"⊢ x + {i} = {i} + x" for i in range(n)]
    return inputs, ["omega" if i % 2 else "simp" for i in range(n)]


def test_batches_bucket_lengths_and_pad_to_a_multiple(gen):
    inputs, tactics = _pairs()
    bucketed = Batches(gen, inputs, tactics, 8, seed=0, bucket=True, pad_multiple=8)
    random = Batches(gen, inputs, tactics, 8, seed=0, bucket=False, pad_multiple=8)
    assert sorted(np.concatenate(bucketed.order(0)).tolist()) == list(range(64))
    enc, labels = bucketed.tensors(bucketed.order(0)[0], gen.device)
    assert enc["input_ids"].shape[1] % 8 == 0 and labels.shape[1] % 8 == 0
    assert (enc["input_ids"][enc["attention_mask"] == 0] == 0).all() and (labels == -100).any()
    padded = [b.tensors(i, gen.device)[0]["input_ids"].numel() for b in (bucketed, random) for i in b.order(0)]
    assert sum(padded[:8]) < sum(padded[8:])  # similar lengths per batch pad less


def test_plan_guard_and_throughput_row(gen):
    assert planned_steps(100.0, 10.0, 10, 1000, 2.0) == 100  # the budget binds
    assert planned_steps(1000.0, 10.0, 10, 100, 2.0) == 20  # two epochs end it sooner
    assert StepVariant().name == "sdpa" and StepVariant("eager", compile=True, autocast=False).name == "eager+compile+fp32"
    with pytest.raises(ValueError, match="attention"):
        set_attention(gen.model, "flash")
    inputs, tactics = _pairs()
    batches = Batches(gen, inputs, tactics, 8, seed=0)
    ceiling = matmul_ceiling(gen.device, 128, reps=2)
    row = probe(gen, StepVariant(attention="eager", autocast=False), batches, probe_picks(batches, 2), ceiling["tflops"])
    assert row["examples_per_s"] > 0 and row["flops_per_example"] > 0 and row["fused_adamw"]
    assert row["share_of_bf16_rate"] == pytest.approx(row["tflops"] / ceiling["tflops"], rel=0.01, abs=1e-4)
    done = train_timed(gen, StepVariant(autocast=False), batches, 12, 60.0, 5e-3, 2, log_every=4)
    assert (done["steps"], done["stopped_by"], done["partial"]) == (12, "end", False)
    assert [r["step"] for r in done["log"]] == [4, 8, 12] and math.isfinite(done["final_train_loss"])
    assert done["examples"] == 12 * 8 - 0 and not gen.model.training
    stopped = train_timed(gen, StepVariant(autocast=False), batches, 12, 0.0, 5e-3, 2)
    assert (stopped["steps"], stopped["stopped_by"], stopped["partial"]) == (0, "budget", True)
