"""Metrics for ranked premise lists (premise retrieval evaluation).

Each query is one tactic: a ranked list of candidate premise names (with the
module defining each) judged against the premises the tactic actually used.

- Duplicates count only at their first occurrence; later copies are removed
  before cutting at k.
- R@k  = |gold ∩ top-k| / |gold|
- P@k  = |gold ∩ top-k| / k   (k, not the list length)
- F1@k = 2PR / (P + R), 0 when both are 0
- MRR  = 1 / rank of the first gold premise in the whole list, 0 if none
- nDCG@k = DCG@k / IDCG@k, DCG@k = sum_{i=1..k} rel_i / log2(i + 1) with
  rel = 1.0 for gold, 0.3 for a non-gold premise from a gold module, else 0.
  IDCG@k is the DCG@k of [1.0] * |gold| + [0.3] * n_same_module.
- Queries with no gold premise yield None: excluded from means, but counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

KS: tuple[int, ...] = (1, 5, 10, 20, 50)
GRADED_SAME_MODULE = 0.3


@dataclass(frozen=True)
class Judgement:
    """Ground truth for one query."""

    gold: frozenset[str]  # full names of premises the tactic used
    gold_modules: frozenset[str]  # modules defining a gold premise
    # Accessible non-gold candidates defined in a gold module; only feeds the
    # ideal DCG, since the ranked list alone cannot tell us how many exist.
    n_same_module: int = 0


def dedupe(ranked: Sequence[str]) -> list[int]:
    """Indices of the first occurrence of each name, in rank order.

    Indices rather than names so callers can keep parallel lists (modules)
    aligned with the deduplicated names.
    """
    seen: set[str] = set()
    keep: list[int] = []
    for i, name in enumerate(ranked):
        if name not in seen:
            seen.add(name)
            keep.append(i)
    return keep


def graded_relevance(
    ranked_names: Sequence[str],
    ranked_modules: Sequence[str | None],
    j: Judgement,
) -> list[float]:
    """1.0 for gold, GRADED_SAME_MODULE for a non-gold premise in a gold module, else 0."""
    rels: list[float] = []
    for name, module in zip(ranked_names, ranked_modules, strict=True):
        if name in j.gold:
            rels.append(1.0)
        elif module and module in j.gold_modules:
            rels.append(GRADED_SAME_MODULE)
        else:
            rels.append(0.0)
    return rels


def _dcg(rels: Sequence[float], k: int) -> float:
    # Rank i (1-based) is discounted by log2(i + 1); enumerate is 0-based.
    return sum(r / math.log2(i + 2) for i, r in enumerate(rels[:k]))


def query_metrics(
    ranked_names: Sequence[str],
    ranked_modules: Sequence[str | None],
    j: Judgement,
    ks: Sequence[int] = KS,
) -> dict[str, float] | None:
    """R@k, P@k, F1@k, nDCG@k for each k, and MRR; None if the query has no gold."""
    if not j.gold:
        return None
    if len(ranked_names) != len(ranked_modules):
        raise ValueError("ranked_names and ranked_modules must have the same length")
    if any(k < 1 for k in ks):
        raise ValueError("every k must be >= 1")

    keep = dedupe(ranked_names)
    names = [ranked_names[i] for i in keep]
    modules = [ranked_modules[i] for i in keep]
    rels = graded_relevance(names, modules, j)
    is_gold = [n in j.gold for n in names]
    ideal = [1.0] * len(j.gold) + [GRADED_SAME_MODULE] * j.n_same_module

    out: dict[str, float] = {}
    for k in ks:
        hits = sum(is_gold[:k])
        recall = hits / len(j.gold)
        precision = hits / k
        f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
        out[f"R@{k}"] = recall
        out[f"P@{k}"] = precision
        out[f"F1@{k}"] = f1
        # IDCG > 0 because gold is non-empty and k >= 1.
        out[f"nDCG@{k}"] = _dcg(rels, k) / _dcg(ideal, k)

    first = next((i for i, g in enumerate(is_gold) if g), None)
    out["MRR"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


def aggregate(per_query: Iterable[dict[str, float] | None]) -> dict[str, float]:
    """Mean of each metric over queries with gold, plus n_queries and n_no_gold."""
    sums: dict[str, float] = {}
    # Per-key counts keep the means right if callers mixed different ks.
    counts: dict[str, int] = {}
    n_queries = 0
    n_no_gold = 0
    for m in per_query:
        if m is None:
            n_no_gold += 1
            continue
        n_queries += 1
        for key, value in m.items():
            sums[key] = sums.get(key, 0.0) + value
            counts[key] = counts.get(key, 0) + 1
    out = {key: total / counts[key] for key, total in sums.items()}
    out["n_queries"] = n_queries
    out["n_no_gold"] = n_no_gold
    return out
