"""Errors and skip accounting for reading LeanDojo-format data.

Bad input is reported as one line naming the file, the record and the field, so a user
can open the file and look; the alternative, a traceback from inside `json`, names none.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


class DataError(ValueError):
    """A problem in an input file, located as precisely as the format allows."""

    def __init__(self, path: str, message: str, record: int | str | None = None,
                 field_name: str | None = None) -> None:
        self.path = str(path)
        self.record = record
        self.field_name = field_name
        # One line always: the CLI prints the error as a single `error: ...` line.
        self.message = " ".join(str(message).splitlines())
        where = self.path
        if record is not None:
            # A JSONL line is named as such ("line 12"); an array element by its index.
            rec = str(record)
            where += f": {rec}" if rec.startswith("line ") else f": record {rec}"
        if field_name is not None:
            where += f": field '{field_name}'"
        super().__init__(f"{where}: {self.message}")


class UserInputError(DataError):
    """A mistake in what the user passed (a missing folder, a stage not yet run), said in one
    line that names the input and how to fix it.

    A DataError only so that the CLI's existing one-line handler prints it as it is; it has no
    file and record of its own."""

    def __init__(self, message: str) -> None:
        self.path, self.record, self.field_name = "", None, None
        self.message = " ".join(str(message).splitlines())
        ValueError.__init__(self, self.message)


@dataclass
class SkipLog:
    """Counts records skipped for a reason and keeps the first few messages of each kind.

    Readers in `skip` mode record here instead of raising, so one bad record in 100k
    costs that record only, and the summary says how many were dropped and why.
    """

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    max_examples: int = 3

    def add(self, reason: str, message: str = "") -> None:
        self.counts[reason] += 1
        kept = self.examples.setdefault(reason, [])
        if message and len(kept) < self.max_examples:
            kept.append(message)

    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        if not self.counts:
            return "no records skipped"
        parts = [f"{n} {reason}" for reason, n in sorted(self.counts.items())]
        return "skipped: " + ", ".join(parts)

    def as_dict(self) -> dict:
        return {"counts": dict(self.counts), "examples": self.examples}
