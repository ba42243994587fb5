"""`leandojo-real/select` and `leandojo-real/report`: real val cut once, by theorem, into two halves.

Every choice (a fusion's members, the tactic neighbours' settings, any new setting) is made on
`select`; numbers are reported on `report`, which no choice has seen. The cut is by theorem (a
theorem's tactics share a proof, so they stay on one side), seeded, and stratified on whether a
theorem has traced tactics, so both halves get about half of the real tactics. It is committed as
theorem keys (`prover/data/splits/leandojo-real-halves.json`), not as a copy of the data:
`Dataset.theorems("leandojo-real/report")` reads `leandojo-real/val` and keeps that half.
`make_halves` recomputes it; a test checks the committed file is what it gives.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

HALVES_FILE = Path(__file__).with_name("splits") / "leandojo-real-halves.json"
SOURCE = "leandojo-real/val"
HALVES = ("leandojo-real/select", "leandojo-real/report")
SEED = 20261127


def theorem_key(theorem: Any) -> str:
    """`file::full_name`: unique in a LeanDojo split (a full name alone need not be)."""
    return f"{theorem.file_path}::{theorem.full_name}"


def make_halves(theorems: list[Any], seed: int = SEED) -> dict[str, list[str]]:
    """Split theorems into two halves: seeded, by theorem, stratified on having tactics."""
    rng = random.Random(seed)
    out: dict[str, list[str]] = {"select": [], "report": []}
    for traced in (True, False):
        keys = sorted(theorem_key(t) for t in theorems if bool(t.traced_tactics) == traced)
        rng.shuffle(keys)
        half = (len(keys) + 1) // 2
        out["select"] += keys[:half]
        out["report"] += keys[half:]
    return {k: sorted(v) for k, v in out.items()}


def half_keys(split: str) -> set[str]:
    """The theorem keys of `leandojo-real/select` or `leandojo-real/report`."""
    data = json.loads(HALVES_FILE.read_text(encoding="utf-8"))
    return set(data[split.split("/")[1]])


def is_half(split: str) -> bool:
    return split in HALVES
