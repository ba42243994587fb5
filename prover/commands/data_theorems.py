"""`prover data theorems PROJECT [--sorries] --out FILE`: a Lake project's theorems, from source.

The list `prover benchmark --theorems FILE` (or `theorems.minif2f_path=FILE`) takes, in
MiniF2F's layout (`prover.tracing.project_theorems`); each theorem says whether its proof holds
a `sorry`, as `prove-sorries` finds them (`prover.sorries.find`), and `--sorries` keeps only those.
"""
from __future__ import annotations

import sys
from pathlib import Path


def mark_sorries(theorems: list, project) -> None:
    """Set each theorem's `sorry` (a `sorry` in its proof) and `whole_sorry` (its proof is
    only that) from the sorry finder's scan of its file."""
    from prover.data.lean_decls import LeanFile
    from prover.sorries.find import find_in_text
    by_file: dict[str, list] = {}
    for t in theorems:
        by_file.setdefault(t.file_path, []).append(t)
    disk = {f.path: f.disk for f in project.files}
    for path, ts in by_file.items():
        text = disk[path].read_bytes().decode("utf-8")
        lean = LeanFile.scan(text, path)
        found = find_in_text(text, path)
        for t in ts:
            start = lean.index(t.start[0], t.start[1] - 1)
            end = lean.index(t.end[0], t.end[1] - 1)
            inside = [s for s in found if start is not None and end is not None
                      and start <= (lean.index(s.line, s.column) or -1) < end]
            t.sorry = bool(inside)
            t.whole_sorry = any(s.whole_proof for s in inside)


def run_theorems(project: str, out: str, sorries_only: bool = False) -> int:
    from prover.data.jsonio import write_json
    from prover.data.lake_project import NotALakeProject, read_own_files
    from prover.tracing.project_theorems import read_theorems, theorem_list
    try:
        proj = read_own_files(project)
    except NotALakeProject as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    theorems, problems = read_theorems(proj)
    for p in problems:
        print(f"warning: {p['file']}: {p['message']}", file=sys.stderr)
    mark_sorries(theorems, proj)
    if sorries_only:
        theorems = [t for t in theorems if t.sorry]
    data = theorem_list(proj, theorems, problems)
    write_json(out, data)
    splits = {}
    for t in theorems:
        splits[t.split or "none"] = splits.get(t.split or "none", 0) + 1
    said = ", ".join(f"{n} {s}" for s, n in sorted(splits.items()))
    print(f"{proj.root.name}: {len(theorems)} theorems{' with a sorry' if sorries_only else ''} "
          f"from {data['files']} files ({said or 'none'}) -> {Path(out)}")
    return 0
