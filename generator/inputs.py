"""The generator's input text: premises one per line, best first, then the proof state.

Premises use the retriever's `<VAR> args <GOAL> goal` form, prefixed by the premise's name
so a tactic can cite it (`premise_text="full"`, the paper's), or the name alone ("name"): a
small model on a CPU budget then sees five premises in the bytes of one, and a tactic cites
premises by name. The byte budget keeps the state whole and drops premises from the
end of the list (the lowest-ranked) until the rest fit. With `max_state_bytes` the state
first keeps only its last that many bytes (the goal is at the end): a long real state then
leaves room for premises, which a whole state past the budget would push out.

Retrieval-augmented inputs (`input.neighbor_tactics`, issue 28) also show the tactics of the
nearest training states, one per line after a `> ` marker, between the premises and the state:
the network can then copy a neighbour's tactic and put a premise it is shown into it. They
claim the budget before the premises (the neighbours alone are a stronger baseline than
premises are), and the lowest-ranked of either are dropped first.
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


TACTIC_MARK = "> "  # starts a neighbour-tactic line; no premise name or state line starts so


def _fit(lines: Sequence[str], budget: int) -> list[str]:
    kept: list[str] = []
    for line in lines:
        cost = n_bytes(line)
        if cost > budget:
            break  # the lowest-ranked go first: never skip one to fit a later, worse one
        kept.append(line)
        budget -= cost
    return kept


def format_input(state: str, premises: Sequence[Premise], max_bytes: int,
                 premise_text: str = "full", max_state_bytes: int | None = None,
                 tactics: Sequence[str] = ()) -> tuple[str, int]:
    """The model input and how many of `premises` (a prefix of them) it holds. `tactics`:
    neighbour tactics, best first, shown after the premises (module doc)."""
    if max_state_bytes is not None:
        state = keep_end(state, max_state_bytes)
    budget = max_bytes - n_bytes(state)
    shown = _fit([TACTIC_MARK + normalize_tactic(t) + "\n" for t in tactics], budget)
    budget -= sum(n_bytes(t) for t in shown)
    lines = _fit([premise_line(p, premise_text) + "\n" for p in premises], budget)
    return "".join(lines) + "".join(shown) + state, len(lines)
