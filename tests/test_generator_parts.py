"""A generator carried back in parts (generator/parts.py): split, reassembled, loaded, same outputs."""
from __future__ import annotations

import pytest
import torch

from generator.model import TacticGenerator, fresh_model
from generator.parts import MIB, PART_NAME, assemble, bf16_bytes, round_to_bf16, write_parts
from generator.settings import InputConfig, ModelConfig

TINY = ModelConfig(d_model=64, d_ff=128, num_layers=2, num_decoder_layers=1, num_heads=2, d_kv=32, dropout=0.0)


def _gen() -> TacticGenerator:
    torch.manual_seed(0)
    gen = TacticGenerator(fresh_model(TINY), InputConfig(max_bytes=128, max_target_bytes=32, premise_text="name"))
    gen.pool = ["simp", "rfl"]
    round_to_bf16(gen.model)  # the weights as they travel
    gen.model.eval()
    return gen


def test_parts_reassemble_into_a_model_with_the_same_outputs(tmp_path):
    gen = _gen()
    part = 40 * 1024  # forces several parts and the byte embedding split across them
    written = write_parts(gen, tmp_path / "out", max_part_bytes=part, extra={"steps": 3})
    assert len(written) > 2 and all(p.stat().st_size <= part for p in written)
    assert [p.name for p in written] == [PART_NAME.format(i) for i in range(len(written))]
    folder = assemble(tmp_path / "out", tmp_path / "model")
    back = TacticGenerator.load(folder)
    assert back.pool == ["simp", "rfl"] and back.input_cfg.max_bytes == 128 and back.input_cfg.premise_text == "name"
    inputs, tactics = ["foo\n⊢ a = a", "⊢ b ≤ b + 1"], ["rfl", "simp"]
    assert back.tactic_logprobs(inputs, tactics) == pytest.approx(gen.tactic_logprobs(inputs, tactics), abs=1e-5)
    a, b = gen.generate(inputs, num_tactics=2), back.generate(inputs, num_tactics=2)
    assert [[s.tactic for s in x] for x in a] == [[s.tactic for s in x] for x in b]
    assert (folder / "device_training.json").read_text() == '{"steps": 3}'


def test_a_missing_part_or_a_model_too_large_is_refused(tmp_path):
    gen = _gen()
    written = write_parts(gen, tmp_path / "out", max_part_bytes=100 * 1024)
    written[-1].unlink()
    with pytest.raises(ValueError, match="incomplete"):
        assemble(written[:-1], tmp_path / "model")
    with pytest.raises(ValueError, match="can come back"):
        write_parts(gen, tmp_path / "big", max_total_bytes=bf16_bytes(gen.model) - 1)
    assert not (tmp_path / "big").exists()
    assert bf16_bytes(gen.model) < MIB
