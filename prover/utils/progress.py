"""Progress bars for long jobs: labelled with what they count, quiet when there is nothing to watch.

Every bar in the project comes from `progress_bar`, so they share three rules: the label says
what is counted (`desc` and `unit`); a bar of a single step is not drawn (it would flash
`0/1` then `1/1` and tell nothing); and where stderr is not a terminal (a CI log, `ray job
logs`) a bar redraws at most every 30 s instead of filling the log with carriage returns
(callers pass `refresh=False` to `set_postfix`, so a new postfix waits for the next redraw).
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from tqdm import tqdm

NON_TTY_INTERVAL_S = 30.0


def progress_bar(iterable: Iterable | None = None, *, desc: str, unit: str, total: int | None = None,
                 initial: int = 0, disable: bool = False, leave: bool = True) -> tqdm:
    """A tqdm bar counting `unit`s of `desc`; disabled for one step or less to go."""
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable) + initial
    if total is not None and total - initial <= 1:
        disable = True
    tty = sys.stderr.isatty()
    kwargs: dict[str, Any] = {} if tty else {"mininterval": NON_TTY_INTERVAL_S}
    return tqdm(iterable, desc=desc, unit=unit, total=total, initial=initial, disable=disable,
                leave=leave, dynamic_ncols=tty, **kwargs)
