"""A trained generator carried back from a lent machine in parts (issue 54).

The device tool returns at most 8 files of at most 16 MiB, 64 MiB in all. `write_parts` stores a
generator's weights in bf16 as parts of at most `max_part_bytes` (prover/utils/parts.py, shared
with the retriever's lease); the first part's metadata holds what a model folder needs beside the
weights (T5 config, input budgets, tactic pool). `assemble` reads the parts back into a
`from_pretrained`-loadable folder (weights in fp32 again), so every CPU benchmark loads it as it
loads a model trained here.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from generator.model import INPUT_CONFIG, TacticGenerator, save_pool
from generator.settings import InputConfig
from prover.utils.parts import (MIB, bf16_bytes, bf16_state, part_paths, read_tensor_parts, round_to_bf16,
                                write_tensor_parts)

__all__ = ["MIB", "PART_NAME", "assemble", "bf16_bytes", "round_to_bf16", "write_parts"]

PART_NAME = "model-part-{:02d}.safetensors"


def write_parts(gen: TacticGenerator, out: str | Path, max_part_bytes: int = 16 * MIB,
                max_total_bytes: int = 64 * MIB, extra: dict | None = None) -> list[Path]:
    """`gen`'s weights in bf16 as parts under `out`; the list written. A model over
    `max_total_bytes` raises ValueError before anything is written."""
    # Tied weights are stored once (save_pretrained does the same); a T5 re-ties them on load.
    meta = {"config": json.dumps(gen.model.config.to_dict()), "input_config": json.dumps(asdict(gen.input_cfg)),
            "pool": json.dumps(list(gen.pool)), "extra": json.dumps(extra or {})}
    return write_tensor_parts(bf16_state(gen.model), out, PART_NAME, max_part_bytes, max_total_bytes, meta)


def assemble(parts: Sequence[str | Path] | str | Path, dest: str | Path) -> Path:
    """The parts (a list, or the folder holding them) as a model folder `dest`; ValueError when
    a part is missing."""
    from transformers import T5Config, T5ForConditionalGeneration
    if isinstance(parts, (str, Path)):
        parts = part_paths(parts, PART_NAME)
    state, first = read_tensor_parts(parts)
    config = T5Config.from_dict(json.loads(first["config"]))
    model = T5ForConditionalGeneration(config)
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    # Only tied copies may be missing (T5 ties lm_head and the encoder's and decoder's embeddings).
    untied = [k for k in missing if not k.endswith(("embed_tokens.weight", "lm_head.weight"))]
    if untied or unexpected:
        raise ValueError(f"model parts do not fit their config: missing {untied[:3]}, unexpected {unexpected[:3]}")
    model.tie_weights()
    dest = Path(dest)
    gen = TacticGenerator(model, InputConfig(**json.loads(first["input_config"])))
    gen.save_pretrained(dest)
    (dest / INPUT_CONFIG).write_text(first["input_config"])
    pool = json.loads(first.get("pool", "[]"))
    if pool:
        save_pool(dest, pool)
    if first.get("extra") and json.loads(first["extra"]):
        (dest / "device_training.json").write_text(first["extra"])
    return dest
