"""The paper's robustness checks: perturb the hypotheses of test states, re-evaluate.

Shuffling hypotheses changes nothing a proof depends on, so a retriever that reads the
state as a set of facts should not move; dropping 20% of the hypotheses of large states
(15 or more) imitates a user pasting a partial context into the search engine.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from prover.data.pairs import PremiseQuery
from prover.data.state import parse_state, render_state

MIN_HYPS_FOR_DROP = 15
DROP_FRACTION = 0.2


def shuffle_hypotheses(state: str, rng: random.Random) -> str:
    cases = parse_state(state)
    out = []
    for c in cases:
        hyps = list(c.hypotheses)
        rng.shuffle(hyps)
        out.append(replace(c, hypotheses=tuple(hyps)))
    return render_state(out) if cases else state


def drop_hypotheses(state: str, rng: random.Random, fraction: float = DROP_FRACTION,
                    min_hyps: int = MIN_HYPS_FOR_DROP) -> str | None:
    """The state with `fraction` of its hypotheses removed, or None if it has fewer than
    `min_hyps` (such states are left out of the drop check, as in the paper)."""
    cases = parse_state(state)
    if sum(len(c.hypotheses) for c in cases) < min_hyps:
        return None
    out = []
    for c in cases:
        keep = sorted(rng.sample(range(len(c.hypotheses)),
                                 len(c.hypotheses) - round(fraction * len(c.hypotheses))))
        out.append(replace(c, hypotheses=tuple(c.hypotheses[i] for i in keep)))
    return render_state(out)


def perturbed_queries(queries: Sequence[PremiseQuery], kind: str, seed: int = 0
                      ) -> tuple[list[PremiseQuery], list[PremiseQuery]]:
    """(original, perturbed) query lists of equal length for `kind` in {shuffle, drop}."""
    rng = random.Random(seed)
    orig, pert = [], []
    for q in queries:
        if kind == "shuffle":
            new = shuffle_hypotheses(q.state, rng)
        elif kind == "drop":
            new = drop_hypotheses(q.state, rng)
        else:
            raise ValueError(f"unknown perturbation {kind!r}")
        if new is not None:
            orig.append(q)
            pert.append(replace(q, state=new))
    return orig, pert
