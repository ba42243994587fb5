"""Found tactics as Lean text: a tactic block, and a whole proof after a theorem's `:=`."""
from __future__ import annotations

from collections.abc import Sequence


def tactic_block(tactics: Sequence[str], column: int, newline: str = "\n") -> str:
    """Tactics one per line from `column`; the first line is placed by the caller. A tactic
    that spans lines keeps its own relative indentation."""
    lines: list[str] = []
    for tac in tactics:
        body = tac.replace("\r\n", "\n").strip("\n").rstrip()
        if not body.strip():
            raise ValueError("empty tactic")
        first, *rest = body.split("\n")
        lines += [first.strip()] + [ln.rstrip() for ln in rest]
    return (newline + " " * column).join(lines)


def standalone_proof(tactics: Sequence[str]) -> str:
    """The tactics as a whole proof term (`by` and an indented block), as it follows a
    theorem's `:=` (and as `lean_dojo.check_proof` puts it)."""
    if not tactics:
        raise ValueError("no tactics")
    block = tactic_block(tactics, 2, "\n")
    # One one-line tactic stays on the `by` line, as people write it (`:= by simp`).
    return f"by {block}" if len(tactics) == 1 and "\n" not in block else "by\n  " + block
