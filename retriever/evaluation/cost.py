"""Model size and compute per query, measured rather than estimated where torch runs.

FLOPs of the torch part of one `retrieve` call are counted with torch's FlopCounterMode;
the inner-product search over the premise matrix (FAISS or numpy, invisible to it) is added
as 2·N·d. BM25 does sparse lookups, not dense arithmetic: its FLOPs are reported as 0.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from prover.data.pairs import PremiseQuery
from retriever.base import Retriever, TheoremContext


def _attrs(obj: Any) -> list[Any]:
    return list(vars(obj).values()) if hasattr(obj, "__dict__") else []


def _modules(r: Any) -> list[torch.nn.Module]:
    """Torch modules a retriever (or the retrievers and scorers it wraps) holds."""
    found: list[torch.nn.Module] = []
    for value in _attrs(r):
        if isinstance(value, torch.nn.Module):
            found.append(value)
        elif isinstance(value, Retriever) or hasattr(value, "model"):
            found.extend(_modules(value))
        elif isinstance(value, list):
            found.extend(m for v in value if isinstance(v, Retriever) for m in _modules(v))
    return found


def _search_flops(r: Any) -> int:
    vectors = getattr(r, "premise_vectors", None)
    if vectors is None:
        vectors = getattr(r, "embeddings", None)
    flops = 2 * vectors.shape[0] * vectors.shape[1] if vectors is not None else 0
    for value in _attrs(r):
        if isinstance(value, Retriever):
            flops += _search_flops(value)
        elif isinstance(value, list):
            flops += sum(_search_flops(v) for v in value if isinstance(v, Retriever))
    return flops


def retriever_cost(r: Retriever, queries: list[PremiseQuery], k: int = 100, n: int = 8) -> dict:
    params = {id(p): p.numel() for m in _modules(r) for p in m.parameters()}
    flops = 0
    sample = queries[:n]
    with FlopCounterMode(display=False) as counter:
        for q in sample:
            r.retrieve([q.state], k, [TheoremContext(q.file_path, q.position)])
    if sample:
        flops = counter.get_total_flops() / len(sample) + _search_flops(r)
    return {"parameters": sum(params.values()), "flops_per_query": int(flops),
            "gflops_per_query": float(f"{flops / 1e9:.4g}")}
