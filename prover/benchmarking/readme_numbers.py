"""Every number of README.md's Results section, recomputed from committed files (issue 62).

    python -m prover.benchmarking.readme_numbers

For each results file the section names, where its per-query data are committed in a form this
reads (the generator benchmark's `outcomes/STEM-CONDITION.jsonl.gz`; `per_query/STEM.jsonl.gz`
of the structure, additive-twins and fusion-context benchmarks), each row's mean and 95%
interval and each paired difference are recomputed from them with the project's bootstrap
(retriever/evaluation/bootstrap.py: 2,000 resamples of theorems, seed 0), R@1 and R@10 from each
query's top 10 and gold premises, and compared with what the file says. Where a file has no
such data, its numbers are read as the file writes them, and the output says so, with the
file's own line on why and how to regenerate them (prover/benchmarking/per_query.py). Then
every number the section quotes must be among the numbers of the files named on its line or in
its paragraph (the rule of prover/benchmarking/cited_numbers.py), recomputed where they could
be. Exits 1 when a number is not found or a recomputation disagrees with its file.
"""
from __future__ import annotations

import copy
import gzip
import json
import re
import sys
from pathlib import Path

import numpy as np

from prover.benchmarking.cited_numbers import HEADLINE, all_numbers, cited, violations
from prover.benchmarking.harness import REPO, RESULTS_DIR, mean_interval, paired_intervals
from prover.benchmarking.per_query import declared_missing, read_per_query

README = REPO / "README.md"


def results_section(text: str) -> str:
    """README's `## Results` section, up to the next `## ` heading."""
    start = text.index("\n## Results\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end > 0 else len(text)]


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol


def _fmt(mean: float, ci: tuple[float, float], scale: float = 100, digits: int = 1, signed: bool = False) -> str:
    f = f"{{:{'+' if signed else ''}.{digits}f}}"
    return f"{f.format(scale * mean)} [{f.format(scale * ci[0])}, {f.format(scale * ci[1])}]"


def _generator(stem: str, result: dict, results: Path) -> tuple[set[str], list[str]]:
    """The generator benchmark's rows and comparisons, from its outcome files."""
    from prover.benchmarking.generator_tables import add_intervals
    n = next(int(m[1]) for k in result["rows"][0] if (m := re.fullmatch(r"exact_match@(\d+)", k)) and m[1] != "1")
    per, keys = {}, None
    for row in result["rows"]:
        path = results / "outcomes" / f"{stem}-{row['condition']}.jsonl.gz"
        if not path.is_file():
            continue
        lines = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
        if keys is not None and [r["key"] for r in lines] != keys:
            return set(), [f"{stem}: {row['condition']}'s outcomes are not the other rows' tactics"]
        keys = [r["key"] for r in lines]
        per[row["condition"]] = {m: np.asarray([r[m] for r in lines], dtype=np.float64)
                                 for m in lines[0] if m != "key"}
    again = copy.deepcopy(result)
    add_intervals(again, per, n, keys)
    out, bad = [], []
    metrics = {"hit@1": "exact_match@1", f"hit@{n}": f"exact_match@{n}", "loglik": "gold_loglik"}
    for row, new in zip(result["rows"], again["rows"]):
        for src, dst in metrics.items():
            if row["condition"] not in per or src not in per[row["condition"]]:
                continue
            mean = float(per[row["condition"]][src].mean())
            ci = new[f"{dst}_ci"]
            scale, digits = (1, 2) if src == "loglik" else (100, 1)
            out.append(_fmt(mean, ci, scale, digits))
            tol = 1e-3 if src == "loglik" else 1e-6
            if not (_close(mean, row[dst], tol) and all(_close(x, y, tol) for x, y in zip(ci, row.get(f"{dst}_ci", ci)))):
                bad.append(f"{stem}: {row['condition']} {dst} recomputes as {mean:.6f} {ci}, the file says "
                           f"{row[dst]} {row.get(f'{dst}_ci')}")
    written = {(c["a"], c["b"], c["metric"]): c for c in result.get("comparisons", [])}
    for c in again["comparisons"]:
        scale, digits = (1, 2) if c["metric"] == "gold_loglik" else (100, 1)
        out.append(_fmt(c["diff"], c["diff_ci"], scale, digits, signed=True))
        w = written.get((c["a"], c["b"], c["metric"]))
        tol = 1e-4 if c["metric"] == "gold_loglik" else 1e-6  # outcome files keep 4 decimals of a log-likelihood
        if w and not all(_close(x, y, tol) for x, y in zip([c["diff"], *c["diff_ci"]], [w["diff"], *w["diff_ci"]])):
            bad.append(f"{stem}: {c['a']} − {c['b']} ({c['metric']}) recomputes as {c['diff']} {c['diff_ci']}, "
                       f"the file says {w['diff']} {w['diff_ci']}")
    return all_numbers("\n".join(out)), bad


def _recall(top: list, gold: list, k: int) -> float:
    return len(set(gold) & set(top[:k])) / len(gold)


def _per_query_rows(stem: str, result: dict, results: Path) -> tuple[set[str], list[str]]:
    """Rows of a per_query/ file (one record per query: theorem, gold, and per row its metrics and
    top 10): every row's mean and interval, every pair's paired difference."""
    records = read_per_query(result["per_query"], results)
    theorems = [r["theorem"] for r in records]
    rows = list(records[0]["rows"])
    values: dict[str, dict[str, np.ndarray]] = {}
    bad = []
    for row in rows:
        metrics = [m for m, v in records[0]["rows"][row].items() if isinstance(v, (int, float))]
        values[row] = {m: np.asarray([r["rows"][row][m] for r in records], dtype=np.float64) for m in metrics}
        for m, k in (("R@1", 1), ("R@10", 10)):  # recomputed from each query's top 10 and gold
            if m in values[row] and "top10" in records[0]["rows"][row]:
                again = np.asarray([_recall(r["rows"][row]["top10"], r["gold"], k) for r in records])
                if not np.allclose(again, values[row][m], atol=1e-6):
                    bad.append(f"{stem}: {row} {m} per query differs from its top 10 and gold")
    written = {r.get("row", r.get("retriever")): r for r in result.get("rows", []) if isinstance(r, dict)}
    out = []
    for row, ms in values.items():
        for m, v in ms.items():
            ci = mean_interval(v, clusters=theorems)
            scale, digits = (1, 3) if m == "MRR" else (100, 1)
            out.append(_fmt(float(v.mean()), ci, scale, digits))
            w = written.get(row)
            if w and m in w and not (_close(float(v.mean()), w[m], 1e-4)
                                     and all(_close(x, y, 1e-4) for x, y in zip(ci, w.get(f"{m} 95% CI", ci)))):
                bad.append(f"{stem}: {row} {m} recomputes as {v.mean():.4f} {ci}, the file says {w[m]} "
                           f"{w.get(f'{m} 95% CI')}")
    for a in rows:
        for b in rows:
            if a == b:
                continue
            for m in set(values[a]) & set(values[b]):
                d = paired_intervals(values[a][m], values[b][m], clusters=theorems).diff
                diff = float(values[a][m].mean() - values[b][m].mean())
                out.append(_fmt(diff, d, 100, 1, signed=True))
                w = written.get(a) or {}
                if b == "fusion" and m == "R@10" and "minus fusion with file, 95% CI" in w and not all(
                        _close(x, y, 1e-4) for x, y in zip(d, w["minus fusion with file, 95% CI"])):
                    bad.append(f"{stem}: {a} − fusion (R@10) recomputes as {d}, the file says "
                               f"{w['minus fusion with file, 95% CI']}")  # fusion_context's rows
                for c in result.get("comparisons", []):
                    if (c.get("a"), c.get("b"), c.get("metric")) == (a, b, m) and not all(
                            _close(x, y, 1e-4) for x, y in zip([diff, *d], [c["diff"], *c["ci"]])):
                        bad.append(f"{stem}: {a} − {b} ({m}) recomputes as {diff:.4f} {d}, the file says "
                                   f"{c['diff']} {c['ci']}")
    return all_numbers("\n".join(out)), bad


def recompute(stem: str, results: Path = RESULTS_DIR) -> tuple[str, set[str], list[str]]:
    """(how, numbers, disagreements) for one results file."""
    result = json.loads((results / f"{stem}.json").read_text())
    if isinstance(result.get("per_query"), str) and (results / result["per_query"]).is_file():
        numbers, bad = _per_query_rows(stem, result, results)
        return f"recomputed from {result['per_query']}", numbers, bad
    if result.get("benchmark") == "generator" and (results / "outcomes" / f"{stem}-none.jsonl.gz").is_file():
        numbers, bad = _generator(stem, result, results)
        return f"recomputed from outcomes/{stem}-*.jsonl.gz", numbers, bad
    own = all_numbers((results / f"{stem}.json").read_text())
    md = results / f"{stem}.md"
    own |= all_numbers(md.read_text()) if md.is_file() else set()
    missing = declared_missing(result)
    why = (f"read as the file writes them: no per-query data ({missing.get('missing', '')} "
           f"Regenerate: `{missing.get('regenerate', '')}`)") if missing else \
        "read as the file writes them (its per-query data are in a form this command does not read)"
    return why, own, []


def check(readme: str, results: Path = RESULTS_DIR) -> tuple[list[str], list[str]]:
    """(report lines, problems) for README text `readme`."""
    section = results_section(readme)
    stems = {p.stem for p in results.glob("*.json")}
    files = cited(section, stems)
    index: dict[str, set[str]] = {HEADLINE: set()}
    report, problems = [], []
    for stem in files:
        how, numbers, bad = recompute(stem, results)
        index[stem] = numbers
        report.append(f"{stem}: {how}")
        problems += bad
    for stem in stems - set(files):
        index[stem] = set()
    problems += violations(section, index, "README.md Results")
    return report, problems


def main(argv: list[str] | None = None) -> int:
    report, problems = check(README.read_text())
    print("\n".join(report))
    if problems:
        print("\nproblems:\n" + "\n".join(problems))
        return 1
    print(f"\nevery number in README.md's Results section is among its files' numbers "
          f"({sum('recomputed' in r for r in report)} of {len(report)} files recomputed from per-query data)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
