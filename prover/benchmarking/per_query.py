"""Per-query data beside a results file: what each of its numbers is a mean of (issue 62).

A number on a page is recomputable only from what it averages: a retrieval row's ranking per
query, a generator row's outcome per tactic. A results file has its per-query data when:

- its JSON holds them (`per_theorem`: search-replay's outcome per theorem) or names them (`per_query`: paths under benchmarks/results/, written by
  `write_per_query`: gzipped JSON lines, one per query, the file's rows' values and rankings);
- `rankings/STEM-ROW.jsonl.gz` or `outcomes/STEM-ROW.jsonl.gz` are committed (the retrieval
  and generator benchmarks' own layout);
- it was computed from other results files (`file`, `base_file`, `halves_file`, a correction's
  `sources`), which carry theirs;
- or it scores no split (role `measure`: times, sizes, throughput): no mean over queries.

Otherwise the file says why not and how to regenerate them: a correction with `per_query`
({"missing": why, "regenerate": command}), added by `python -m prover.benchmarking.corrections`.
`status` says which, the results index shows it, and tests/test_per_query.py fails on a file the
index lists that has neither.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from prover.benchmarking.harness import RESULTS_DIR

LAYOUTS = ("rankings", "outcomes")  # the older per-row layouts: LAYOUT/STEM-ROW.jsonl.gz
PER_QUERY_DIR = "per_query"
EMBEDDED = ("per_theorem", "per_query")  # per-query data held in the file itself (search-replay: each theorem's outcome; informal_dense: each query's top 10)


def write_per_query(stem: str | Path, records: list[dict]) -> str:
    """Write `records` (one per query) beside the results file STEM as
    per_query/NAME.jsonl.gz; returns the path relative to the results folder, for the JSON's
    `per_query`. Byte-stable: the gzip header carries no time or name."""
    stem = Path(stem)
    out = stem.parent / PER_QUERY_DIR / f"{stem.name}.jsonl.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        f.write(text.encode("utf-8"))
    return f"{PER_QUERY_DIR}/{out.name}"


def read_per_query(path: str | Path, results: Path = RESULTS_DIR) -> list[dict]:
    path = Path(path)
    path = path if path.is_absolute() else results / path
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _owner(name: str, stems: list[str]) -> str | None:
    """The results stem a LAYOUT/STEM-ROW.jsonl.gz file belongs to: the longest stem it starts
    with (retrieval-...-cpu-steps-cfr.jsonl.gz is -cpu-steps's, not -cpu's)."""
    owners = [s for s in stems if name.startswith(s + "-")]
    return max(owners, key=len) if owners else None


def layout_files(results: Path = RESULTS_DIR, stems: list[str] | None = None) -> dict[str, list[str]]:
    """stem -> its committed rankings/ and outcomes/ files (paths relative to `results`)."""
    stems = stems if stems is not None else [p.stem for p in results.glob("*.json")]
    out: dict[str, list[str]] = {}
    for layout in LAYOUTS:
        for p in sorted((results / layout).glob("*.jsonl.gz")):
            owner = _owner(p.name.removesuffix(".jsonl.gz"), stems)
            if owner:
                out.setdefault(owner, []).append(f"{layout}/{p.name}")
    return out


def declared_missing(result: dict) -> dict | None:
    """The file's own line on why it has no per-query data and how to regenerate them."""
    for c in reversed(result.get("corrections") or []):
        if isinstance(c, dict) and isinstance(c.get("per_query"), dict):
            return c["per_query"]
    return result.get("per_query") if isinstance(result.get("per_query"), dict) else None


def sources_of(result: dict) -> list[str]:
    paths = [result[k] for k in ("file", "base_file", "halves_file") if isinstance(result.get(k), str)]
    paths += [p for c in result.get("corrections") or [] if isinstance(c, dict) for p in c.get("sources") or []]
    return [Path(p).name.removesuffix(".json") for p in paths]


def status(stem: str, results: dict[str, dict], scored: list[str], results_dir: Path = RESULTS_DIR,
           layouts: dict[str, list[str]] | None = None) -> tuple[str, str]:
    """(kind, what) for the file STEM: ("committed", paths), ("sources", stems),
    ("measure", ""), ("missing", why and how to regenerate), or ("none", "") when the file
    neither has per-query data nor says why (a test fails on it)."""
    result = results[stem]
    if any(isinstance(result.get(k), list) and result[k] and isinstance(result[k][0], dict)
           for k in EMBEDDED):
        return "committed", "in the file"
    named = result.get("per_query")
    named = [named] if isinstance(named, str) else named if isinstance(named, list) else []
    have = [p for p in named if (results_dir / p).is_file()]
    layouts = layouts if layouts is not None else layout_files(results_dir, list(results))
    have += layouts.get(stem, [])
    if have:
        return "committed", ", ".join(dict.fromkeys(have))
    missing = declared_missing(result)
    if missing:
        return "missing", f"{missing.get('missing', '')} Regenerate: `{missing.get('regenerate', '')}`"
    sources = [s for s in sources_of(result) if s in results]
    if sources:
        return "sources", ", ".join(sources)
    if not scored:
        return "measure", ""
    return "none", ""


def cell(kind: str, what: str) -> str:
    """The index's words for a status."""
    return {"committed": "per-query data committed",
            "sources": f"per-query data: those of {what}",
            "measure": "",
            "missing": "**no per-query data** (the file says why and how to regenerate them)",
            "none": "**no per-query data, and no line saying why**"}[kind]
