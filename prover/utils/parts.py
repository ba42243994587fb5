"""Model weights carried back from a lent machine in parts (issues 54 and 64).

The device tool returns at most 8 files of at most 16 MiB, 64 MiB in all. `write_tensor_parts`
stores a model's tensors in bf16 (half of fp32's bytes; the leases train in bf16 autocast anyway)
as safetensors files of at most `max_part_bytes` each, the caller's metadata in the first part;
`read_tensor_parts` reads them back. A tensor larger than a part is split along its first
dimension (a wide model's embedding is). What a model folder needs beside its weights (a config,
a tokenizer's hash, input budgets) is the caller's: generator/parts.py (a T5) and
retriever/training/lease.py (a BERT) build their folders from these two functions.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

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


def bf16_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's tensors in bf16 on the CPU, a tied tensor once (under its first name, as
    save_pretrained keeps it; the loader re-ties it)."""
    state, seen = {}, set()
    for name, t in model.state_dict().items():
        if t.data_ptr() in seen:
            continue
        seen.add(t.data_ptr())
        state[name] = t.detach().to("cpu", torch.bfloat16)
    return state


def _pieces(name: str, t: torch.Tensor, max_bytes: int) -> list[tuple[str, torch.Tensor]]:
    if t.numel() * 2 <= max_bytes or t.ndim == 0 or t.shape[0] < 2:
        return [(name, t)]
    rows = max(1, int(max_bytes // max(1, 2 * t[0].numel())))
    return [(f"{name}@@{i}", t[lo: lo + rows].contiguous()) for i, lo in enumerate(range(0, t.shape[0], rows))]


def part_paths(folder: str | Path, pattern: str) -> list[Path]:
    """The parts named by `pattern` (e.g. "model-part-{:02d}.safetensors") in `folder`."""
    return sorted(Path(folder).glob(pattern.replace("{:02d}", "*")))


def write_tensor_parts(state: dict[str, torch.Tensor], out: str | Path, pattern: str,
                       max_part_bytes: int = 16 * MIB, max_total_bytes: int = 64 * MIB,
                       metadata: dict[str, str] | None = None) -> list[Path]:
    """`state` (bf16 tensors) as parts named by `pattern` under `out`, `metadata` in the first;
    the list written. Over `max_total_bytes` raises ValueError before anything is written."""
    total = sum(2 * t.numel() for t in state.values())
    if total > max_total_bytes:
        raise ValueError(f"the model's bf16 weights take {total / MIB:.1f} MiB, over the {max_total_bytes / MIB:.0f} "
                         f"MiB that can come back (about {max_total_bytes // 2 / 1e6:.0f}M parameters at most)")
    # Room for the safetensors header in each part (a few KiB of names; the first part's metadata).
    meta_bytes = sum(len(k) + len(v) for k, v in (metadata or {}).items())
    budget = max_part_bytes - min(64 * 1024 + meta_bytes, max_part_bytes // 8)
    parts: list[dict[str, torch.Tensor]] = [{}]
    used = 0
    for name, t in state.items():
        for piece_name, piece in _pieces(name, t, budget):
            n = piece.numel() * 2
            if used + n > budget and parts[-1]:
                parts.append({})
                used = 0
            parts[-1][piece_name] = piece.to(torch.bfloat16)
            used += n
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for i, tensors in enumerate(parts):
        path = out / pattern.format(i)
        save_file(tensors, str(path), metadata={"part": str(i), "parts": str(len(parts)),
                                                **((metadata or {}) if i == 0 else {})})
        written.append(path)
    return written


def part_metadata(path: str | Path) -> dict[str, str]:
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        return f.metadata() or {}


def read_tensor_parts(parts: Sequence[str | Path], required: str = "config"
                      ) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The tensors (bf16, split ones joined) and the first part's metadata; ValueError when no
    part is given, one is missing, or the first lacks the `required` metadata key."""
    paths = sorted(Path(p) for p in parts)
    if not paths:
        raise ValueError("no model parts given (*-part-NN.safetensors)")
    first = part_metadata(paths[0])
    n = int(first.get("parts", -1))
    found = sorted(int(part_metadata(p)["part"]) for p in paths)
    if required not in first or found != list(range(n)):
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
    return state, first


def json_meta(**values: object) -> dict[str, str]:
    """Metadata values as safetensors keeps them (strings): each one JSON."""
    return {k: json.dumps(v) for k, v in values.items()}
