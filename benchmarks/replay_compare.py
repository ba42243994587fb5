"""Two committed replay search results on the same theorems, paired theorem by theorem.

    python benchmarks/replay_compare.py --base 5fe09dc --label "network alone" \
        benchmarks/results/search-replay-mathlib-src-leandojo-real-val.json

    python benchmarks/replay_compare.py --base-file benchmarks/results/search-replay-mathlib-src-leandojo-real-report.json \
        --label "8 tactics" benchmarks/results/search-replay-mathlib-src-leandojo-real-report-t32.json

A replay results file is rewritten when its benchmark reruns (a new generator, say), so the
previous run lives on in git; a run with other settings has its own file (`--tag`), compared
with `--base-file`. This reads the file as the working tree has it and as commit
`--base` had it, and for every row both hold, over the theorems both hold: each rate, and the
paired difference (now minus base) with a 95% bootstrap interval over theorems (the retrieval
benchmark's bootstrap), plus the theorems each side alone proved. A simulator's rates: never
pass@1. Writes replay-compare-<dataset>-<split>-vs-<base>.{json,md} beside the file.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import (N_RESAMPLES, SEED, add_allow_dirty, corrections_markdown, mean_interval, paired_intervals,
                                         parser, require_clean_tree, write_and_print)


def at_commit(path: Path, rev: str) -> dict:
    """The file's content at `rev` (a one-line error when git does not have it there)."""
    rel = path.resolve().relative_to(Path.cwd().resolve())
    out = subprocess.run(["git", "show", f"{rev}:{rel.as_posix()}"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"error: {rel} is not in commit {rev}: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout)


def compare(now: dict, base: dict) -> dict:
    """Per shared row: both rates with intervals, now − base with its paired interval, and the
    theorems only one side proved."""
    a = {t["key"]: t for t in now["per_theorem"]}
    b = {t["key"]: t for t in base["per_theorem"]}
    keys = [k for k in a if k in b]  # the file's order: each rate's interval is then the one its own file shows
    rows = []
    for name in [r["row"] for r in now["rows"] if any(r2["row"] == r["row"] for r2 in base["rows"])]:
        x = np.asarray([a[k][name] == "proved" for k in keys], dtype=np.float64)
        y = np.asarray([b[k][name] == "proved" for k in keys], dtype=np.float64)
        rows.append({"row": name, "now": round(float(x.mean()), 6), "now_ci": [round(v, 6) for v in mean_interval(x)],
                     "base": round(float(y.mean()), 6), "base_ci": [round(v, 6) for v in mean_interval(y)],
                     "diff": round(float(x.mean() - y.mean()), 6),
                     "diff_ci": [round(v, 6) for v in paired_intervals(x, y).diff],
                     "only_now": [a[k]["theorem"] for k in keys if a[k][name] == "proved" != b[k][name]],
                     "only_base": [b[k]["theorem"] for k in keys if b[k][name] == "proved" != a[k][name]]})
    return {"theorems": len(keys), "rows": rows}


def markdown(result: dict) -> str:
    pct = lambda v: f"{100 * v:.1f}"  # noqa: E731
    against = (f"`{result['base_file']}` (run at {result['base_commit']})" if result.get("base_file")
               else f"commit {result['base']}")
    lines = [f"# Replay search (simulator, not pass@1): now against {result['label']} "
             f"({'`' + result['base_file'] + '`' if result.get('base_file') else 'commit ' + result['base']})", "",
             f"`{result['file']}` as committed at {result['now_commit']} against {against}, "
             f"over the {result['theorems']} theorems both hold. Rates are the replay simulator's proof rate, "
             f"not pass@1. Brackets: 95% bootstrap intervals ({N_RESAMPLES} resamples of the theorems, seed "
             f"{SEED}), paired for the difference.", "",
             f"| row | now (%) | {result['label']} (%) | now − {result['label']} (points) | proved only now | proved only before |",
             "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['row']} | {pct(r['now'])} [{pct(r['now_ci'][0])}, {pct(r['now_ci'][1])}] "
                     f"| {pct(r['base'])} [{pct(r['base_ci'][0])}, {pct(r['base_ci'][1])}] "
                     f"| {100 * r['diff']:+.1f} [{100 * r['diff_ci'][0]:+.1f}, {100 * r['diff_ci'][1]:+.1f}] "
                     f"| {len(r['only_now'])} | {', '.join(f'`{t}`' for t in r['only_base']) or '0'} |")
    lines += ["", f"Command: `{result['command']}`"]
    lines += corrections_markdown(result)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("file", type=Path, help="a committed search-replay-*.json")
    p.add_argument("--base", help="the commit holding the earlier run of the same file")
    p.add_argument("--base-file", type=Path, help="or another committed results file of the same theorems")
    p.add_argument("--label", default="before", help="what the earlier run was, for the table")
    add_allow_dirty(p)
    args = p.parse_args(argv)
    if (args.base is None) == (args.base_file is None):
        p.error("give one of --base (a commit) and --base-file (a results file)")
    commit = require_clean_tree(args.allow_dirty)
    now = at_commit(args.file, "HEAD")
    base = at_commit(args.base_file, "HEAD") if args.base_file else at_commit(args.file, args.base)
    against = (f"--base-file {args.base_file.as_posix()}" if args.base_file else f"--base {args.base}")
    command = f"python benchmarks/replay_compare.py {against} --label \"{args.label}\" {args.file.as_posix()}"
    result = {"benchmark": "replay_compare", "command": command, "git_commit": commit, "file": args.file.as_posix(),
              "now_commit": now["git_commit"], "base": args.base or args.base_file.stem, "base_commit": base["git_commit"],
              "label": args.label, **({"base_file": args.base_file.as_posix()} if args.base_file else {}),
              **compare(now, base)}
    # Not search-replay-*: that name is for the benchmark's own result files.
    vs = args.base or args.base_file.stem.removeprefix("search-replay-")
    stem = (args.file.parent / f"replay-compare-{args.file.stem.removeprefix('search-replay-')}-vs-{vs}").as_posix()
    write_and_print(stem, result, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
