"""How many times a report (or test) split has been scored: counted from a registry, never
asserted (issue 62; DEVELOPING.md rule 2).

`benchmarks/results/looks.jsonl` holds one line per scoring of a split numbers are reported on
(a split ending in `/report` or `/test`, or a named part of one): which results file, which
benchmark, which commit and which setting. A script that scores such a split calls `take_look`
before it writes its results: the look it gets is one more than the earlier lines of the same
benchmark on the same split, whatever their setting (a recipe scored again, or a new recipe
scored after the split was seen, is a second look), and its own line is appended. The results
index reads a file's look from the registry (`look_of`), unless a correction says otherwise.

The registry was seeded from the results files committed before it existed, in the order of
their commits (`seed`); a file a later run overwrote keeps its earlier line, so the look of
the rerun counts it.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from prover.benchmarking.harness import RESULTS_DIR

REGISTRY = RESULTS_DIR / "looks.jsonl"


def reported(split: str) -> bool:
    """A split numbers are reported on: its looks are counted."""
    base = split.split("#", 1)[0]
    return base.endswith(("/report", "/test"))


def entries(registry: Path = REGISTRY) -> list[dict]:
    if not registry.is_file():
        return []
    return [json.loads(line) for line in registry.read_text().splitlines() if line.strip()]


def earlier(benchmark: str, split: str, registry: Path = REGISTRY, before: int | None = None) -> list[dict]:
    """The registry's scorings of `split` by `benchmark` (the first `before` lines only, when given)."""
    lines = entries(registry)[:before]
    return [e for e in lines if e["benchmark"] == benchmark and e["split"] == split]


def take_look(stem: str, benchmark: str, split: str, commit: str, setting: str,
              registry: Path = REGISTRY) -> dict:
    """Record a scoring of `split` and return what the results file says of it: its `look` (1
    for the first scoring by this benchmark) and the earlier scorings it counted. A split that
    is not reported on is not counted (look None)."""
    if not reported(split):
        return {"look": None, "earlier_looks": []}
    before = earlier(benchmark, split, registry)
    entry = {"stem": stem, "benchmark": benchmark, "split": split, "git_commit": commit, "setting": setting,
             "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    registry.parent.mkdir(parents=True, exist_ok=True)
    with registry.open("a") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")
    return {"look": len(before) + 1,
            "earlier_looks": [{k: e[k] for k in ("stem", "git_commit", "setting")} for e in before]}


def look_of(stem: str, commit: str | None, registry: Path = REGISTRY) -> int | None:
    """The look the registry gives the results file STEM written at `commit` (its line's place
    among the same benchmark's scorings of the same split); None when it has no line."""
    lines = entries(registry)
    for i, e in enumerate(lines):
        if e["stem"] == stem and (commit is None or e["git_commit"] == commit):
            return len(earlier(e["benchmark"], e["split"], registry, before=i)) + 1
    return None


def _split_keys(stem: str, result: dict, scored: list[str]) -> list[str]:
    """The registry's split names for a committed file: the informal query set's report half
    by batch (each batch's queries are their own), else the file's reported splits."""
    if result.get("benchmark") == "informal search: queries":
        batches = ["1", "2"] if "-all-" in stem else ["2"] if "batch2" in stem else ["1"]
        return [f"queries/report#batch{b}" for b in batches]
    return [s for s in scored if reported(s)]


def seed(results: dict[str, dict], commit_time, scored_splits) -> list[dict]:
    """Registry lines for files committed before the registry: every reported split each file
    scored, in the order of the commits that wrote them (`commit_time(commit)`: a sortable key;
    files of one commit by name). `scored_splits(stem, result)`: the splits the index reads."""
    out = []
    for stem, r in results.items():
        for split in _split_keys(stem, r, scored_splits(stem, r)):
            out.append({"stem": stem, "benchmark": r.get("benchmark") or stem, "split": split,
                        "git_commit": r.get("git_commit") or "", "setting": stem,
                        "written_at": None})
    # One run's files by name, the whole query set's after its batch's own (one scoring, two files).
    return sorted(out, key=lambda e: (commit_time(e["git_commit"]), "-all-" in e["stem"], e["stem"]))
