"""ReProver's text: a premise as its retriever and its retrieval-augmented generator read it, and
the generator's input (premises, then the state). Written from ReProver's source (lean-dojo/ReProver,
`common.py`: `Premise.serialize`, `format_augmented_state`, `remove_marks`, `format_state`), so
that its published checkpoints receive the bytes they were trained on, quirks included:

- A premise is its code with the declared name replaced by `<a>full_name</a>`: first every
  `_root_.full_name`, then, for the longest suffix of the name (`A.B.c`, `B.c`, `c`) that
  occurs after whitespace (optionally inside `«»`), every such occurrence. ReProver builds that
  pattern from the suffix **unescaped**, so `.` matches any character and `?`, `+`, `*`, `|`
  act as regex operators: `List.find?_some` never matches itself and stays unmarked, while
  `Nat.add` also matches `Nat_add`. The replacement is a template, as in `re.sub`'s string form.
  Where ReProver's own `re.sub` would raise (a name that is not a valid pattern or template),
  ReProver's evaluation would stop; here that suffix is skipped and the next, shorter one tried.
- The input is the premises, best first, each followed by a blank line, written so that the
  best ends up nearest the state, then the state. A premise that does not fit the byte budget
  (premises and state together) is skipped and the next, worse one tried: the list is not cut.
- A state starting with `N goals` loses that line (Lean 3's header; no-op on Lean 4 states).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

MARK_START, MARK_END = "<a>", "</a>"

# The byte budget of ReProver's retrieval-augmented generator: `max_inp_seq_len` in its
# generation configs (generation/confs/cli_lean4_*.yaml), premises and state together.
REPROVER_MAX_BYTES = 2300


def remove_marks(text: str) -> str:
    """`text` without `<a>` and `</a>` (what ReProver does to its generator's outputs)."""
    return text.replace(MARK_START, "").replace(MARK_END, "")


def mark_name(full_name: str, code: str) -> str:
    """ReProver's serialization of a premise (module docstring)."""
    mark = f"{MARK_START}{full_name}{MARK_END}"
    code = code.replace(f"_root_.{full_name}", mark)
    fields = full_name.split(".")
    for i in range(len(fields)):
        suffix = ".".join(fields[i:])
        try:
            # Unescaped on purpose: ReProver's checkpoints saw the text this rule makes.
            marked = re.sub(f"(?<=\\s)«?{suffix}»?", mark, code)
        except re.error:
            continue
        if marked != code:
            return marked
    return code


def strip_goal_count(state: str) -> str:
    """ReProver's `format_state`: a leading `N goals` header dropped (Lean 3's pretty printer)."""
    m = re.match(r"\d+ goals", state)
    return state[m.end():].strip() if m is not None else state


def _n_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def augmented_state(state: str, premise_texts: Sequence[str], max_bytes: int) -> tuple[str, int]:
    """ReProver's generator input for `state` and serialized premises (best first), and how many
    premises it holds (module docstring)."""
    state = strip_goal_count(state)
    budget = max_bytes - _n_bytes(state)
    text, used, kept = "", 0, 0
    for p in premise_texts:
        piece = f"{p}\n\n"
        cost = _n_bytes(piece)
        if used + cost > budget:
            continue  # skipped, not cut: a later, shorter premise may still fit
        used += cost
        kept += 1
        text = piece + text  # the best ends up last, next to the state
    return text + state, kept
