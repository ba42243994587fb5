"""The generator's dumped candidates per state (benchmarks/tried/candidate_ranker.py dumps them).
Shared by benchmarks/tried/candidate_ranker.py and premise_ceiling.py.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

CONFIG = "configs/generator/benchmark_real.yaml"


def dump_path(run_dir: Path, split: str, premises: str) -> Path:
    return run_dir / f"{split.replace('/', '-')}-{premises}.jsonl.gz"


def read_dump(path: Path) -> list[dict]:
    """The states dumped so far; a tail cut by an interruption is dropped (and redone)."""
    rows: list[dict] = []
    if not path.exists():
        return rows
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                rows.append(json.loads(line))
    except (EOFError, OSError, json.JSONDecodeError):
        pass
    return rows
