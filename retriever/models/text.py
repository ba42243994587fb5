"""The text the neural retrievers read: states and premises with `<VAR>` / `<GOAL>` markers.

A state becomes `<VAR> h₁ <VAR> h₂ <GOAL> goal` per case (cases concatenated), a premise
`<VAR> arg₁ <VAR> arg₂ <GOAL> goal`, so hypotheses line up with arguments and goals with
goals. The fine-grained CFR similarity encodes a premise's two halves separately.
"""
from __future__ import annotations

from prover.data.premise import GOAL_TOKEN, VAR_TOKEN, Premise
from prover.data.state import parse_state


def format_state(state: str) -> str:
    cases = parse_state(state)
    if not cases:
        return f"{GOAL_TOKEN} {state.strip()}"
    parts = []
    for case in cases:
        hyps = " ".join(f"{VAR_TOKEN} {h.render()}" for h in case.hypotheses)
        parts.append(f"{hyps} {GOAL_TOKEN} {case.goal}".strip())
    return " ".join(parts)


def premise_args_text(p: Premise) -> str:
    return " ".join(f"{VAR_TOKEN} {a}" for a in p.args) if p.args else VAR_TOKEN


def premise_goal_text(p: Premise) -> str:
    # Structures and defs without a stated type have no goal; their code is what we know.
    return f"{GOAL_TOKEN} {p.goal or p.code}"


def premise_text(p: Premise) -> str:
    return f"{premise_args_text(p)} {premise_goal_text(p)}"


TRUNCATION_SIDES = ("left", "right")


def cut_tokens(ids: list[int], keep: int, side: str, name: str = "state_side") -> list[int]:
    """At most `keep` of `ids`: the first ones ("right", cut at the end, as Hugging Face does) or
    the last ones ("left", cut at the start, which keeps a state's goal). `name` is the setting
    an error message blames."""
    if side not in TRUNCATION_SIDES:
        raise ValueError(f"{name}={side!r}: the state_side to cut must be 'left' or 'right'")
    keep = max(0, min(keep, len(ids)))
    return ids[len(ids) - keep:] if side == "left" else ids[:keep]
