"""The generator's input text: premises one per line, best first, then the proof state.

Premises use the retriever's `<VAR> args <GOAL> goal` form, prefixed by the premise's name
so a tactic can cite it (`premise_text="full"`, the paper's), or the name alone ("name"): a
small model on a CPU budget then sees five premises in the bytes of one, and a tactic cites
premises by name. The byte budget keeps the state whole and drops premises from the
end of the list (the lowest-ranked) until the rest fit. With `max_state_bytes` the state
first keeps only its last that many bytes (the goal is at the end): a long real state then
leaves room for premises, which a whole state past the budget would push out.
"""
from __future__ import annotations

from collections.abc import Sequence

from prover.data.premise import Premise


PREMISE_TEXTS = ("full", "name")


def premise_line(p: Premise, premise_text: str = "full") -> str:
    if premise_text == "name":
        return p.full_name
    if premise_text != "full":
        raise ValueError(f"input.premise_text must be one of {PREMISE_TEXTS}, not {premise_text!r}")
    # One premise per line: newlines inside a signature would split it into two "premises".
    return " ".join(f"{p.full_name} {p.render()}".split())


def normalize_tactic(t: str) -> str:
    """A tactic with its whitespace runs collapsed: how exact match, the pool and the
    neighbours compare tactics."""
    return " ".join(t.split())


def n_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def keep_end(text: str, max_bytes: int) -> str:
    """The last `max_bytes` UTF-8 bytes of `text`, never splitting a character."""
    raw = text.encode("utf-8")
    return text if len(raw) <= max_bytes else raw[-max_bytes:].decode("utf-8", errors="ignore")


def format_input(state: str, premises: Sequence[Premise], max_bytes: int,
                 premise_text: str = "full", max_state_bytes: int | None = None) -> tuple[str, int]:
    """The model input and how many of `premises` (a prefix of them) it holds."""
    if max_state_bytes is not None:
        state = keep_end(state, max_state_bytes)
    budget = max_bytes - n_bytes(state)
    lines: list[str] = []
    for p in premises:
        line = premise_line(p, premise_text) + "\n"
        cost = n_bytes(line)
        if cost > budget:
            break  # the lowest-ranked go first: never skip one to fit a later, worse one
        lines.append(line)
        budget -= cost
    return "".join(lines) + state, len(lines)
