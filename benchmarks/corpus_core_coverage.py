"""The share of real gold premise mentions a corpus holds, before and after issue 59's additions.

    python benchmarks/corpus_core_coverage.py [--toolchain-src PREFIX/src/lean] [--allow-dirty]

Mentions: every premise provenance (full name, def_path) of the tactics of the 348 real
`mathlib-src/leandojo-real/val` records (LeanDojo Benchmark 4, traced at Lean v4.10.0-rc1).
A mention is held when its full name is a premise of the corpus.

- before: the names of `mathlib-src/corpus.jsonl.gz` (the training corpus, from an independent
  source parser; Lean core absent) and those `prover data corpus` finds in the 300 real Mathlib
  files of `leandojo-real/source/`, without the rows issue 59 adds;
- after: the same with the `@[reassoc]` lemmas and the `@[simps]` lemmas read from a body's
  fields (by `prover data corpus` on those 300 files, and by the same code on each declaration
  text of mathlib-src's corpus, whose rows keep their attributes), and Lean core from `--toolchain-src` when given (the toolchain's `src/lean` at
  v4.10.0-rc1). Without it, the share of mentions LeanDojo places in Lean core is reported as
  what core would add at most, not as held.

Writes benchmarks/results/corpus-core-coverage.{json,md}.
"""
from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from prover.benchmarking.harness import add_allow_dirty, machine, parser, require_clean_tree, write_and_print
from prover.data.lake_project import CORE_PREFIX, core_files
from prover.data.lean_decls import LeanFile
from prover.data.lean_premises import file_premises
from prover.data.project_corpus import build_corpus

ADDED = ("reassoc", "simps-from-body")


def added_kind(row: dict) -> str | None:
    if row["kind"] == "reassoc":
        return "reassoc"
    if row.get("simps_projection") == "body":
        return "simps-from-body"
    return None


def derived_from_code(full_name: str, code: str) -> dict[str, str]:
    """The rows issue 59 adds for one declaration's text (its attributes included), named in
    the declaration's namespace: {name: kind}."""
    if "reassoc" not in code and "simps" not in code:
        return {}
    try:
        scan = file_premises(LeanFile.scan(code, "X.lean"), "X")
    except (ValueError, RecursionError):
        return {}
    base = next((r["full_name"] for r in scan.rows if added_kind(r) is None), None)
    if base is None or not full_name.endswith(base):
        return {}
    ns = full_name[: len(full_name) - len(base)]
    return {ns + r["full_name"]: added_kind(r) for r in scan.rows if added_kind(r) is not None}


def mentions(records: Path) -> list[tuple[str, str]]:
    out = []
    for thm in json.loads(records.read_text()):
        for tac in thm.get("traced_tactics") or []:
            for p in tac["annotated_tactic"][1]:
                out.append((p["full_name"], p["def_path"]))
    return out


def core_names(src: Path) -> set[str]:
    names: set[str] = set()
    for f in core_files(src):
        try:
            names |= {r["full_name"] for r in file_premises(LeanFile.scan(f.disk.read_text(), f.path), f.module).rows}
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            continue
    return names


def main(argv: list[str] | None = None) -> int:
    data = Path(os.environ.get("PROVER_DATA", "../shared/data"))
    p = parser(__doc__)
    p.add_argument("--records", default=str(data / "mathlib-src" / "leandojo-real" / "val.json"))
    p.add_argument("--reference", default=str(data / "mathlib-src" / "corpus.jsonl.gz"))
    p.add_argument("--source", default=str(data / "mathlib-src" / "leandojo-real" / "source"))
    p.add_argument("--toolchain-src", default=None, help="a toolchain's src/lean (Lean core's sources)")
    add_allow_dirty(p)
    p.add_argument("--results-dir", default="benchmarks/results")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)
    reference: set[str] = set()
    from_reference: dict[str, str] = {}
    with gzip.open(args.reference, "rt", encoding="utf-8") as f:
        for line in f:
            for q in json.loads(line)["premises"]:
                reference.add(q["full_name"])
                from_reference.update(derived_from_code(q["full_name"], q["code"]))
    work = Path(tempfile.mkdtemp(prefix="corpus-core-"))
    meta = build_corpus(args.source, work, progress=False)
    rows = [q for line in (work / "corpus.jsonl").read_text().splitlines() for q in json.loads(line)["premises"]]
    ours_before = {q["full_name"] for q in rows if added_kind(q) is None}
    added = {**from_reference, **{q["full_name"]: added_kind(q) for q in rows if added_kind(q) is not None}}
    core = core_names(Path(args.toolchain_src)) if args.toolchain_src else set()
    got = mentions(Path(args.records))
    n = len(got)
    before = reference | ours_before
    after = before | set(added) | core
    in_core = [m for m in got if m[1].startswith(CORE_PREFIX)]
    held_before = sum(name in before for name, _ in got)
    held_after = sum(name in after for name, _ in got)
    by_addition = Counter(added[name] for name, _ in got if name not in before and name in added)
    by_addition["lean core"] = sum(name in core and name not in before for name, _ in got)
    missing_after = Counter("lean core" if path.startswith(CORE_PREFIX) else "other"
                            for name, path in got if name not in after)
    result = {
        "benchmark": "corpus-core-coverage", "command": "python benchmarks/corpus_core_coverage.py " +
        " ".join(argv if argv is not None else sys.argv[1:]), "git_commit": commit, "machine": machine(),
        "config": {"records": args.records, "reference": args.reference, "source": args.source,
                   "toolchain_src": args.toolchain_src},
        "mentions": n, "theorems": len(json.loads(Path(args.records).read_text())),
        "held_before": held_before, "held_after": held_after,
        "share_before_pct": round(100 * held_before / n, 1), "share_after_pct": round(100 * held_after / n, 1),
        "added_by": dict(by_addition), "missing_after": dict(missing_after),
        "core_mentions": len(in_core), "core_share_pct": round(100 * len(in_core) / n, 1),
        "core_measured": bool(args.toolchain_src),
        "ours": {"files": meta["files"], "premises": meta["premises"],
                 "added_rows": dict(Counter(added.values())),
                 "added_rows_from_reference_code": dict(Counter(from_reference.values()))},
        "missing_examples": sorted({name for name, path in got if name not in after})[:30],
    }
    write_and_print(Path(args.results_dir) / "corpus-core-coverage", result, markdown)
    return 0


def markdown(r: dict) -> str:
    core = ("measured from the toolchain's sources" if r["core_measured"] else
            f"not measured (no toolchain source here): LeanDojo places {r['core_mentions']} of the mentions "
            f"({r['core_share_pct']}%) in Lean core, what reading the toolchain's sources can add at most")
    lines = [
        "# Gold premise mentions the corpus holds (leandojo-real/val)", "",
        f"Commit {r['git_commit']}. {r['mentions']} premise mentions in the tactics of {r['theorems']} real "
        f"records.", "",
        "| corpus | mentions held | share % |", "|---|---|---|",
        f"| before: mathlib-src's names and `prover data corpus` on the 300 real files | {r['held_before']} "
        f"| {r['share_before_pct']} |",
        f"| after: with `@[reassoc]`, `@[simps]` from fields{', Lean core' if r['core_measured'] else ''} "
        f"| {r['held_after']} | {r['share_after_pct']} |", "",
        f"Added by: {', '.join(f'{k} {v}' for k, v in sorted(r['added_by'].items())) or 'nothing'}. "
        f"Still missing: {', '.join(f'{k} {v}' for k, v in sorted(r['missing_after'].items()))}.", "",
        f"Lean core: {core}.", "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
