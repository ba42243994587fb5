"""What a lent device's call allows, and what a call carries there, shared by the device scripts
(benchmarks/device_generator.py and device_retriever.py): the limits, the bytes that travel, and
the clock a run on the device keeps against its deadline."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

MIB = 1024 * 1024
TRAVEL_LIMIT = 64 * MIB  # the device tool's working-tree limit
CALL_LIMIT_S = 600  # one device call


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def travelling_bytes(repo: Path, carry: list[Path]) -> tuple[int, dict[str, int]]:
    """What a device call sends: tracked and untracked-not-ignored files, and the carried paths."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=repo, capture_output=True, check=True).stdout.split(b"\0")
    parts: dict[str, int] = {}
    for name in filter(None, listed):
        p = repo / name.decode()
        if p.is_file():
            top = "/".join(Path(name.decode()).parts[:3])
            parts[top] = parts.get(top, 0) + p.stat().st_size
    total = sum(parts.values())
    for c in carry:
        n = folder_bytes(c) if c.exists() else 0
        parts[f"carry:{c.relative_to(repo) if c.is_relative_to(repo) else c}"] = n
        total += n
    return total, parts


class Clock:
    """Seconds left before the deadline, counted from the script's start (`START_EPOCH`)."""

    def __init__(self, deadline: float) -> None:
        self.start = float(os.environ.get("START_EPOCH") or time.time())
        self.deadline = deadline

    def left(self) -> float:
        return self.deadline - (time.time() - self.start)

    def elapsed(self) -> float:
        return time.time() - self.start
