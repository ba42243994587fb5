"""Which theorem a free worker proves next: the theorems of one file go to one worker, in order.

A worker's REPL elaborates a file's commands once and reuses them for every theorem after
them in that file (`prover.env.source_target`), and an import set once for every file that
has it. That pays only when a worker is given the theorems of one file together, so a free
worker takes, in this order: the next theorem of the file it last worked on; the first
theorem of a file no worker has started; else (near the end of a run, or MiniF2F, whose
theorems share a file) the next theorem of the file with the most left. No worker waits
while a theorem is left. Within a file, theorems go in source order.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable
from typing import Any


def _file_of(task: Any) -> str:
    return task.theorem.file_path


def _order(task: Any) -> tuple:
    return tuple(task.theorem.start)


class FileQueue:
    """Pending (task, attempt) pairs, handed out by file affinity."""

    def __init__(self, items: Iterable[tuple[Any, int]]) -> None:
        self._files: dict[str, deque] = {}
        for task, attempt in sorted(items, key=lambda x: (_file_of(x[0]), _order(x[0]))):
            self._files.setdefault(_file_of(task), deque()).append((task, attempt))
        self._fresh = deque(self._files)  # files no worker has started, in first-seen order
        self._worker_file: dict[Hashable, str] = {}

    def __len__(self) -> int:
        return sum(len(q) for q in self._files.values())

    def __bool__(self) -> bool:
        return len(self) > 0

    def pop_for(self, worker: Hashable) -> tuple[Any, int]:
        """The next (task, attempt) for `worker`. Raises IndexError when none is left."""
        file = self._worker_file.get(worker)
        if not (file and self._files.get(file)):
            file = None
            while self._fresh and file is None:
                candidate = self._fresh.popleft()
                if self._files.get(candidate):
                    file = candidate
            if file is None:
                left = [(len(q), f) for f, q in self._files.items() if q]
                if not left:
                    raise IndexError("no task left")
                file = max(left)[1]
        self._worker_file[worker] = file
        return self._files[file].popleft()

    def push_front(self, task: Any, attempt: int) -> None:
        """A task to retry first (by the next worker free: its own may have died)."""
        file = _file_of(task)
        self._files.setdefault(file, deque()).appendleft((task, attempt))
        self._fresh.appendleft(file)
