"""A trained generator carried back from a lent machine in parts (issue 54).

The device tool returns at most 8 files of at most 16 MiB, 64 MiB in all. `write_parts` stores a
generator's weights in bf16 (half of fp32's bytes; training ran in bf16 autocast anyway) as
safetensors files of at most `max_part_bytes` each; the first part's metadata holds what a model
folder needs beside the weights (T5 config, input budgets, tactic pool). `assemble` reads the
parts back into a `from_pretrained`-loadable folder (weights in fp32 again), so every CPU
benchmark loads it as it loads a model trained here. A tensor larger than a part is split along
its first dimension (the tied byte embedding of a wide model is).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from generator.model import INPUT_CONFIG, TacticGenerator, save_pool
from generator.settings import InputConfig

PART_NAME = "model-part-{:02d}.safetensors"
MIB = 1024 * 1024


def bf16_bytes(model: torch.nn.Module) -> int:
    """What the weights take in bf16 (shared tensors once)."""
    seen = {t.data_ptr(): t.numel() for t in model.state_dict().values()}
    return 2 * sum(seen.values())


@torch.no_grad()
def round_to_bf16(model: torch.nn.Module) -> None:
    """The weights as they will travel (bf16), kept in their own dtype: a model scored after this
    scores as its reassembled copy does."""
    for p in model.parameters():
        p.copy_(p.to(torch.bfloat16).to(p.dtype))


def _pieces(name: str, t: torch.Tensor, max_bytes: int) -> list[tuple[str, torch.Tensor]]:
    if t.numel() * 2 <= max_bytes or t.ndim == 0 or t.shape[0] < 2:
        return [(name, t)]
    rows = max(1, int(max_bytes // max(1, 2 * t[0].numel())))
    return [(f"{name}@@{i}", t[lo: lo + rows].contiguous()) for i, lo in enumerate(range(0, t.shape[0], rows))]


def write_parts(gen: TacticGenerator, out: str | Path, max_part_bytes: int = 16 * MIB,
                max_total_bytes: int = 64 * MIB, extra: dict | None = None) -> list[Path]:
    """`gen`'s weights in bf16 as parts under `out`; the list written. A model over
    `max_total_bytes` raises ValueError before anything is written."""
    out = Path(out)
    total = bf16_bytes(gen.model)
    if total > max_total_bytes:
        raise ValueError(f"the model's bf16 weights take {total / MIB:.1f} MiB, over the {max_total_bytes / MIB:.0f} "
                         f"MiB that can come back (about {max_total_bytes // 2 / 1e6:.0f}M parameters at most)")
    # Tied weights are stored once (save_pretrained does the same); a T5 re-ties them on load.
    state, seen = {}, set()
    for name, t in gen.model.state_dict().items():
        if t.data_ptr() in seen:
            continue
        seen.add(t.data_ptr())
        state[name] = t.detach().to("cpu", torch.bfloat16)
    # Room for the safetensors header in each part (a few KiB for a T5's names).
    budget = max_part_bytes - min(64 * 1024, max_part_bytes // 8)
    parts: list[dict[str, torch.Tensor]] = [{}]
    used = 0
    for name, t in state.items():
        for piece_name, piece in _pieces(name, t, budget):
            n = piece.numel() * 2
            if used + n > budget and parts[-1]:
                parts.append({})
                used = 0
            parts[-1][piece_name] = piece
            used += n
    meta = {"config": json.dumps(gen.model.config.to_dict()), "input_config": json.dumps(asdict(gen.input_cfg)),
            "pool": json.dumps(list(gen.pool)), "extra": json.dumps(extra or {})}
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for i, tensors in enumerate(parts):
        path = out / PART_NAME.format(i)
        save_file(tensors, str(path), metadata={"part": str(i), "parts": str(len(parts)), **(meta if i == 0 else {})})
        written.append(path)
    return written


def _metadata(path: Path) -> dict[str, str]:
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        return f.metadata() or {}


def assemble(parts: Sequence[str | Path] | str | Path, dest: str | Path) -> Path:
    """The parts (a list, or the folder holding them) as a model folder `dest`; ValueError when
    a part is missing."""
    from transformers import T5Config, T5ForConditionalGeneration
    if isinstance(parts, (str, Path)):
        parts = sorted(Path(parts).glob(PART_NAME.replace("{:02d}", "*")))
    paths = sorted(Path(p) for p in parts)
    if not paths:
        raise ValueError("no model parts given (model-part-NN.safetensors)")
    first = _metadata(paths[0])
    n = int(first.get("parts", -1))
    found = sorted(int(_metadata(p)["part"]) for p in paths)
    if "config" not in first or found != list(range(n)):
        raise ValueError(f"model parts incomplete: found parts {found}, the first says {n}")
    state: dict[str, torch.Tensor] = {}
    split: dict[str, list[tuple[int, torch.Tensor]]] = {}
    for p in paths:
        for name, t in load_file(str(p)).items():
            if "@@" in name:
                base, i = name.rsplit("@@", 1)
                split.setdefault(base, []).append((int(i), t))
            else:
                state[name] = t
    for base, pieces in split.items():
        state[base] = torch.cat([t for _, t in sorted(pieces, key=lambda x: x[0])])
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
