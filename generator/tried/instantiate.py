"""Premise-instantiated candidates: a neighbour's tactic with its premise swapped for a retrieved one.

The nearest training states' tactics (generator/neighbors.py) are often right in shape and
wrong in the premise: `rw [Nat.succ_le_iff]` where this goal needs `Nat.lt_succ_iff`. A
training tactic that names exactly one premise, once, is a template; the premises shown for
this state (retrieved, or the gold ones for the oracle row) fill it, written with as many
dotted components as the template wrote (`succ_le_iff` -> `lt_succ_iff`, `Nat.succ_le_iff` ->
`Nat.lt_succ_iff`). This is where premises can change the candidates at all: the network alone
ignores them (issue 28).

Scores form a distribution mixed with the neighbours' own, as the model's is:

    P(t) = (1 - weight) P_neighbours(t) + weight * sum over templates d and shown premises r of
           w_d * pi_r * [fill(d, r) = t]

w_d is the template's neighbour weight (softmax of BM25 at the neighbours' temperature), and
pi_r a geometric decay over the premise's rank (decay^r, normalized over the top `m`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from generator.inputs import normalize_tactic
from generator.neighbors import TacticNeighbors
from prover.data.tactic_steps import name_pattern


@dataclass(frozen=True)
class InstantiateConfig:
    m: int = 3  # premises shown per state that fill a template
    decay: float = 0.5  # pi_r proportional to decay**r
    weight: float = 0.5  # the instantiated candidates' share of the mixture


def template(tactic: str, premises: Sequence[str]) -> tuple[int, int, int, str] | None:
    """(start, end, components written, premise) of the one premise this tactic names once;
    None when it names none, several, or one several times."""
    if len(premises) != 1:
        return None
    found = list(name_pattern(premises[0]).finditer(tactic))
    if len(found) != 1:
        return None
    m = found[0]
    return m.start(), m.end(), m.group().count(".") + 1, premises[0]


def fill(tactic: str, slot: tuple[int, int, int, str], premise: str) -> str:
    """The template with `premise` written in its slot, with as many components as it had."""
    start, end, parts, _ = slot
    return tactic[:start] + ".".join(premise.split(".")[-parts:]) + tactic[end:]


def instantiated(neighbors: TacticNeighbors, near: list[tuple[int, float]], shown: Sequence[str],
                 cfg: InstantiateConfig) -> dict[str, float]:
    """The mixture P(t) over the neighbours' tactics and their instantiations (module doc),
    most probable first. `near`: (training state, BM25 score) of the nearest states;
    `shown`: premise full names, best first."""
    if not near:
        return {}
    s = np.asarray([score for _, score in near], dtype=np.float64)
    t = neighbors.cfg.temperature
    w = np.exp((s - s.max()) / t) if t else s
    w = w / w.sum()
    shown = list(dict.fromkeys(shown))[: cfg.m]
    pi = np.asarray([cfg.decay ** r for r in range(len(shown))], dtype=np.float64)
    pi = pi / pi.sum() if len(pi) else pi
    first: dict[str, str] = {}  # normalized -> as first written
    out: dict[str, float] = {}

    def add(text: str, p: float) -> None:
        written = first.setdefault(normalize_tactic(text), text)
        out[written] = out.get(written, 0.0) + p

    own = (1.0 - cfg.weight) if shown else 1.0
    filled = 0.0
    for (d, _), wd in zip(near, w):
        tactic = neighbors.tactics[d]
        add(tactic, own * wd)
        slot = template(tactic, neighbors.premises[d]) if neighbors.premises is not None and shown else None
        if slot is None:
            continue
        for premise, p in zip(shown, pi):
            add(fill(tactic, slot, premise), cfg.weight * wd * p)
            filled += cfg.weight * wd * p
    if shown and filled < cfg.weight:  # templates were few: their unused share goes back
        scale = 1.0 / (1.0 - cfg.weight + filled)
        out = {k: v * scale for k, v in out.items()}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def filled(neighbors: TacticNeighbors, near: list[tuple[int, float]], shown: Sequence[str], m: int) -> list[str]:
    """The nearest states' templates each filled with each of the top `m` shown premises
    (nearest template first, best premise first), for the model to score beside its own
    candidates: how a premise the network is shown reaches the suggestions even when beam
    search does not write it."""
    if neighbors.premises is None or m <= 0 or not shown:
        return []
    top = list(dict.fromkeys(shown))[:m]
    out: dict[str, None] = {}
    for d, _ in near:
        slot = template(neighbors.tactics[d], neighbors.premises[d])
        if slot is not None:
            for premise in top:
                out.setdefault(fill(neighbors.tactics[d], slot, premise), None)
    return list(out)


def plug_in(gen: Any, m: int) -> Any:
    """`gen` (a TacticGenerator) adding, for each state it is given with its premises shown, its
    neighbours' one-premise tactics filled with each of the top `m` of them (0: none)."""
    def extra(neighbors: TacticNeighbors, nearest: list, shown: Sequence) -> list[list[str]]:
        return [filled(neighbors, ns, names, m) if ns else [] for ns, names in zip(nearest, shown)]
    gen.extra_candidates = extra if m > 0 else None
    return gen
