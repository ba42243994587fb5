"""Corrections to a committed results file: what a later session found wrong in what it says,
written into the file itself (its JSON `corrections` and its Markdown's Corrections section),
never by editing its numbers. An entry is a sentence, or an object with a `note` (the sentence)
and fields the results index reads (prover/benchmarking/results_index.py: `models`, `sources`,
`look`, `chosen_on`, `split`, `role`).

    python -m prover.benchmarking.corrections STEM '{"note": "...", "look": 2}'
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from prover.benchmarking.harness import RESULTS_DIR
from prover.data.jsonio import write_json

HEADING = "## Corrections"


def note_of(entry: str | dict) -> str:
    return entry if isinstance(entry, str) else entry["note"]


def add_correction(stem: str, entry: str | dict, results: Path = RESULTS_DIR,
                   render: Callable[[dict], str] | None = None) -> None:
    """Append `entry` to STEM.json's corrections and its note to STEM.md's Corrections section
    (an entry already there is not added twice). `render`, the family's Markdown writer where
    it shows corrections itself (`markdown` of search_replay, replay_compare, ...), rewrites the
    Markdown from the corrected JSON instead, so the file stays its render."""
    if isinstance(entry, dict) and not entry.get("note"):
        raise ValueError("a structured correction needs a `note`, the sentence it adds")
    json_path, md_path = results / f"{stem}.json", results / f"{stem}.md"
    result = json.loads(json_path.read_text())
    if entry in (result.get("corrections") or []):
        return
    result.setdefault("corrections", []).append(entry)
    write_json(json_path, result)
    if render is not None:
        md_path.write_text(render(result))
        return
    md = (md_path.read_text() if md_path.exists() else "").rstrip("\n")
    if HEADING not in md:
        md += f"\n\n{HEADING}\n"
    md_path.write_text(md + f"\n- {note_of(entry)}\n")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m prover.benchmarking.corrections STEM 'SENTENCE or JSON object'")
        return 2
    stem, text = args
    if not (RESULTS_DIR / f"{stem}.json").exists():
        print(f"error: no results file {RESULTS_DIR / stem}.json")
        return 1
    try:
        entry = json.loads(text) if text.lstrip().startswith("{") else text
        add_correction(stem, entry)
    except (json.JSONDecodeError, ValueError) as e:
        print(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
