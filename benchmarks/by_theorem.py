"""A committed retrieval results file re-scored with intervals that resample theorems.

Nothing is run again: every number comes from the file's committed rankings
(benchmarks/results/rankings/STEM-ROW.jsonl.gz). Files written before intervals resampled
theorems (their `bootstrap.paired_over` is "queries") get here the intervals the project's rule
asks for: each row's R@10, and its paired difference to the file's best no-learning row
(`best_no_learning`), in points, a theorem's queries together.

    python benchmarks/by_theorem.py retrieval-mathlib-src-leandojo-real-val-cpu
"""
from __future__ import annotations

import json
import sys

from prover.benchmarking.harness import (N_RESAMPLES, RESULTS_DIR, SEED, command_line, git_commit,
                                         machine, mean_interval, paired_intervals, parser,
                                         require_clean_tree, write_and_print)
from retriever.evaluation.evaluate import per_query_from_rankings


def _pts(ci: tuple[float, float]) -> list[float]:
    return [round(100 * ci[0], 1), round(100 * ci[1], 1)]


def rescore(stem: str) -> dict:
    source = json.loads((RESULTS_DIR / f"{stem}.json").read_text())
    split, bar = source["split"], source.get("best_no_learning")
    values, theorems = {}, None
    for row in (r["retriever"] for r in source["rows"]):
        path = RESULTS_DIR / "rankings" / f"{stem}-{row}.jsonl.gz"
        if not path.exists():
            continue
        keys, per_query = per_query_from_rankings(path)
        names = [t for t, _ in keys]
        theorems = theorems or names
        if names == theorems:  # only rows scored on the very same queries are paired
            values[row] = per_query["R@10"]
    rows = {row: {split: {"R@10": round(100 * float(v.mean()), 1), "ci": _pts(mean_interval(v, clusters=theorems))}}
            for row, v in values.items()}
    comparisons = [{"a": row, "b": bar, "stat": "diff", "ci": _pts(paired_intervals(v, values[bar], clusters=theorems).diff)}
                   for row, v in values.items() if bar in values and row != bar]
    return {"benchmark": "by-theorem", "file": f"benchmarks/results/{stem}.json", "split": split,
            "queries": len(theorems or []), "theorems": len(set(theorems or [])),
            "bootstrap": {"resamples": N_RESAMPLES, "seed": SEED, "level": 0.95, "paired_over": "theorems"},
            "best_no_learning": bar, "rows": rows, "comparisons": comparisons}


def markdown(r: dict) -> str:
    split = r["split"]
    lines = [f"# {r['file']} by theorem", "",
             f"R@10 (%) on {split}, {r['queries']} queries of {r['theorems']} theorems, re-scored from the "
             f"committed rankings of `{r['file']}` (nothing run again). 95% paired bootstrap intervals, "
             f"{r['bootstrap']['resamples']} resamples of the theorems (a theorem's queries together), seed "
             f"{r['bootstrap']['seed']}. − best: the paired difference to {r['best_no_learning']}, in points.", "",
             "| retriever | R@10 | − best (points) |", "|---|---|---|"]
    diff = {c["a"]: c["ci"] for c in r["comparisons"]}
    for row, v in r["rows"].items():
        ci, d = v[split]["ci"], diff.get(row)
        lines.append(f"| {row} | {v[split]['R@10']} [{ci[0]}, {ci[1]}] | "
                     + (f"[{d[0]:+.1f}, {d[1]:+.1f}]" if d else "") + " |")
    lines += ["", f"Commit {r['git_commit']}. Command: `{r['command']}`", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("stem", help="a retrieval results file under benchmarks/results/, without .json")
    args = p.parse_args(argv)
    if not (RESULTS_DIR / f"{args.stem}.json").exists():
        print(f"error: no results file {RESULTS_DIR / args.stem}.json")
        return 1
    commit = require_clean_tree(False)
    result = rescore(args.stem)
    result |= {"git_commit": commit, "command": command_line("benchmarks/by_theorem.py", argv),
               "machine": machine()}
    write_and_print(RESULTS_DIR / f"by-theorem-{args.stem}", result, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
