"""A built corpus measured against reference data: LeanDojo's premise provenance, another corpus.

- `placement`: every premise that real LeanDojo records annotate (`annotated_tactic`
  provenance: full_name, def_path, def_pos) and whose def_path is a file of the corpus must be a
  row of that file with that name whose `def_pos` is LeanDojo's; the share found and the misses.
- `compare_by_kind`: on the files both corpora hold, the premises (by file and name) only one
  of them has, counted by kind, with examples.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from prover.data.jsonio import iter_jsonl, load_json

_EXAMPLES = 8


def annotated_premises(records_path: str | Path, files: Iterable[str]) -> list[dict]:
    """The distinct premises (name, def_path, def_pos, def_end_pos) the records annotate whose
    def_path is one of `files`."""
    files = set(files)
    seen: dict[tuple, dict] = {}
    for rec in load_json(records_path):
        for t in rec.get("traced_tactics") or []:
            for p in t["annotated_tactic"][1]:
                if p["def_path"] in files:
                    key = (p["full_name"], p["def_path"], tuple(p["def_pos"]))
                    seen.setdefault(key, {k: p[k] for k in ("full_name", "def_path", "def_pos", "def_end_pos")})
    return [seen[k] for k in sorted(seen)]


def placement(rows: list[dict], wanted: list[dict]) -> dict:
    """How many of `wanted` (annotated premises) the corpus `rows` hold by name in their file
    at LeanDojo's def_pos; the misses say what the corpus has under that name instead."""
    where: dict[tuple[str, str], list[list[int]]] = {}
    for r in rows:
        for p in r["premises"]:
            where.setdefault((r["path"], p["full_name"]), []).append(p.get("def_pos"))
    missed = []
    for w in wanted:
        places = where.get((w["def_path"], w["full_name"]))
        if places and list(w["def_pos"]) in places:
            continue
        missed.append({**w, "corpus_def_pos": places or None,
                       "why": "at another place" if places else "name not in the file"})
    n = len(wanted)
    return {"annotated": n, "found": n - len(missed), "share": round((n - len(missed)) / n, 4) if n else None,
            "missed": missed}


def compare_by_kind(rows: list[dict], reference: str | Path) -> dict:
    """Premises by (file, name) in one corpus and not the other, on the files both hold."""
    ours = {(r["path"], p["full_name"]): p.get("kind", "") for r in rows for p in r["premises"]}
    files = {r["path"] for r in rows}
    ref: dict[tuple[str, str], str] = {}
    shared_files = set()
    for _, obj in iter_jsonl(reference):
        if obj["path"] in files:
            shared_files.add(obj["path"])
            for p in obj["premises"]:
                ref[(obj["path"], p["full_name"])] = p.get("kind", "")
    ours = {k: v for k, v in ours.items() if k[0] in shared_files}
    only_ours = sorted(k for k in ours if k not in ref)
    only_ref = sorted(k for k in ref if k not in ours)

    def by_kind(keys: list[tuple[str, str]], kinds: dict) -> dict:
        out: dict[str, dict] = {}
        for kind, n in Counter(kinds[k] for k in keys).most_common():
            out[kind] = {"count": n, "examples": [f"{k[0]}: {k[1]}" for k in keys if kinds[k] == kind][:_EXAMPLES]}
        return out

    return {"files": len(shared_files), "ours": len(ours), "reference": len(ref),
            "both": len(ours.keys() & ref.keys()),
            "ours_by_kind": dict(Counter(ours.values()).most_common()),
            "reference_by_kind": dict(Counter(ref.values()).most_common()),
            "only_ours": by_kind(only_ours, ours), "only_reference": by_kind(only_ref, ref)}
