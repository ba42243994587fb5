"""Every number of README.md's Results section, recomputed from committed files (issue 62).

    python -m prover.benchmarking.readme_numbers

For each results file the section names, its rows' means and 95% intervals and its paired
differences are recomputed from the per-query data committed beside it, with the project's
bootstrap (retriever/evaluation/bootstrap.py) at the resamples, seed and unit of resampling the
file says (theorems, intent groups, or queries where an older file says so), and compared with
what the file says. The forms read:

- `per_query/STEM.jsonl.gz` (`write_per_query`: one record per query, each row's metrics and
  top 10; the structure, additive-twins, fusion-context and informal-search benchmarks), and
  the same records held in the file itself (`per_query`: informal_dense's);
- `rankings/STEM-ROW.jsonl.gz` (the retrieval benchmark: each query's ranking, its metrics
  recomputed from it);
- `outcomes/STEM-CONDITION.jsonl.gz` (the generator benchmark: each tactic's outcome);
- `per_theorem` in the file (search-replay: each theorem's outcome), and a replay comparison's
  two files as committed at the commits it names.

R@1 and R@10 are also recomputed from each query's top 10 and gold where the records hold them.
A file with none of these is read as it writes its numbers, and the output says so, with the
file's own line on why and how to regenerate them (prover/benchmarking/per_query.py). Then every
number the section quotes must be among the numbers of the files named on its line or in its
paragraph (the rule of prover/benchmarking/cited_numbers.py), the recomputed ones where they
could be. Exits 1 when a number is not found or a recomputation disagrees with its file;
`--require-all` also when a file could not be recomputed (tests/test_readme_numbers.py).
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


def _written_row(w: dict, m: str) -> tuple[float | None, list | None]:
    """A written row's mean and interval of metric `m`, in either layout the benchmarks use
    (`R@10`, `R@10 95% CI`; or `metrics.R@10`, `R@10_ci`)."""
    mean = w.get(m, (w.get("metrics") or {}).get(m))
    return mean, w.get(f"{m} 95% CI", w.get(f"{m}_ci"))


def _embedded(records: list[dict]) -> list[dict]:
    """informal_dense's records (`group`, `metrics` and `top10` by row) in write_per_query's
    layout (`cluster`, `rows` with each row's metrics and top 10)."""
    return [{"cluster": r["group"], "gold": r["gold"],
             "rows": {row: {**ms, "top10": r.get("top10", {}).get(row, [])} for row, ms in r["metrics"].items()}}
            for r in records]


def _per_query_rows(stem: str, result: dict, records: list[dict]) -> tuple[set[str], list[str]]:
    """Rows of per-query records (one per query: its bootstrap cluster (`cluster`, else its
    theorem), gold, and per row its metrics and top 10): every row's mean and interval, every
    pair's paired difference, checked against the file's rows and comparisons."""
    clusters = [r.get("cluster", r.get("theorem")) for r in records]
    if any(c is None for c in clusters):
        return set(), [f"{stem}: a per-query record names neither its cluster nor its theorem"]
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
    listed = result.get("rows") or next((t["rows"] for t in result.get("tables") or []), [])
    written = {r.get("row", r.get("retriever")): r for r in listed if isinstance(r, dict)}
    out = []
    for row, ms in values.items():
        for m, v in ms.items():
            ci = mean_interval(v, clusters=clusters)
            out.append(_fmt(float(v.mean()), ci, 100, 1))
            if m == "MRR":
                out.append(_fmt(float(v.mean()), ci, 1, 3))
            mean, wci = _written_row(written.get(row) or {}, m)
            if mean is not None and not (_close(float(v.mean()), mean, 1e-4)
                                         and all(_close(x, y, 1e-4) for x, y in zip(ci, wci or ci))):
                bad.append(f"{stem}: {row} {m} recomputes as {v.mean():.4f} {ci}, the file says {mean} {wci}")
    split = result.get("split")
    for a in rows:
        for b in rows:
            if a == b:
                continue
            for m in set(values[a]) & set(values[b]):
                d = paired_intervals(values[a][m], values[b][m], clusters=clusters).diff
                diff = float(values[a][m].mean() - values[b][m].mean())
                out.append(_fmt(diff, d, 100, 1, signed=True))
                w = written.get(a) or {}
                if b == "fusion" and m == "R@10" and "minus fusion with file, 95% CI" in w and not all(
                        _close(x, y, 1e-4) for x, y in zip(d, w["minus fusion with file, 95% CI"])):
                    bad.append(f"{stem}: {a} − fusion (R@10) recomputes as {d}, the file says "
                               f"{w['minus fusion with file, 95% CI']}")  # fusion_context's rows
                for c in result.get("comparisons", []):
                    if (c.get("a"), c.get("b"), c.get("metric")) != (a, b, m):
                        continue
                    if c.get("split") not in (None, split):
                        continue  # on part of the split (informal_search's batch 1 alone): not these records
                    if not all(_close(x, y, 1e-4) for x, y in zip([diff, *d], [c["diff"], *c.get("ci", c.get("diff_ci"))])):
                        bad.append(f"{stem}: {a} − {b} ({m}) recomputes as {diff:.4f} {d}, the file says "
                                   f"{c['diff']} {c.get('ci', c.get('diff_ci'))}")
    return all_numbers("\n".join(out)), bad


def _rankings(stem: str, result: dict, results: Path) -> tuple[set[str], list[str]]:
    """The retrieval benchmark's rows from rankings/STEM-ROW.jsonl.gz: each query's metrics
    recomputed from its ranking (retriever/evaluation/metrics.py), each row's R@10 and MRR with
    their intervals, and its ratio to BM25 and differences to locality, the best no-learning row
    and its first stage, as `add_intervals` draws them, over what the file resampled."""
    from retriever.evaluation.benchmark import add_intervals
    from retriever.evaluation.evaluate import per_query_from_rankings
    per, keys, bad = {}, None, []
    for row in result["rows"]:
        path = results / "rankings" / f"{stem}-{row['retriever']}.jsonl.gz"
        if not path.is_file():
            continue
        k, per[row["retriever"]] = per_query_from_rankings(path)
        if keys is not None and k != keys:
            return set(), [f"{stem}: {row['retriever']}'s rankings are not the other rows' queries"]
        keys = k
    over = (result.get("bootstrap") or {}).get("paired_over", "queries")
    again = copy.deepcopy(result)
    add_intervals(again, per, [t for t, _ in keys] if over == "theorems" else None)
    out = []
    for row, new in zip(result["rows"], again["rows"]):
        values = per.get(row["retriever"])
        if not values:
            continue
        for m, v in values.items():
            if m in row.get("metrics", {}) and not _close(float(v.mean()), row["metrics"][m], 1e-6):
                bad.append(f"{stem}: {row['retriever']} {m} recomputes as {v.mean():.6f}, the file says {row['metrics'][m]}")
        for key, ci in new.items():
            if not key.endswith("_ci"):
                continue
            if key in row and not all(_close(x, y, 1e-6) for x, y in zip(ci, row[key])):
                bad.append(f"{stem}: {row['retriever']} {key} recomputes as {ci}, the file says {row[key]}")
            metric = key.removesuffix("_ci")
            if metric in values:  # a row's own mean and interval
                out.append(_fmt(float(values[metric].mean()), ci, *((1, 3) if metric == "MRR" else (100, 1))))
            elif "ratio" in key:
                out.append(f"[{ci[0]:.2f}, {ci[1]:.2f}]")
            else:
                out.append(_fmt(0.0, ci, 100, 1, signed=True).split(" ", 1)[1])
    return all_numbers("\n".join(out)), bad


def _halves(stem: str, result: dict, results: Path) -> tuple[set[str], list[str]]:
    """real-halves' retrieval rows (benchmarks/real_halves.py): each row's R@10 on the select
    and report halves of real val, recomputed from the real-val retrieval file's rankings cut by
    the committed halves (prover/data/splits/leandojo-real-halves.json), and its report
    comparisons; intervals resample theorems. (Its generator and replay parts are not read.)"""
    from prover.data.halves import half_keys
    from retriever.evaluation.evaluate import per_query_from_rankings
    source = "retrieval-mathlib-src-leandojo-real-val-cpu"
    halves = {h: {k.split("::", 1)[1] for k in half_keys(f"leandojo-real/{h}")} for h in ("select", "report")}
    rows, theorems, out, bad = {}, None, [], []
    for row in result["retrieval"]["rows"]:
        path = results / "rankings" / f"{source}-{row}.jsonl.gz"
        if not path.is_file():
            return set(), [f"{stem}: rankings/{path.name} is not committed"]
        keys, values = per_query_from_rankings(path)
        theorems = theorems or [t for t, _ in keys]
        if [t for t, _ in keys] != theorems:
            return set(), [f"{stem}: {row}'s rankings are not the other rows' queries"]
        rows[row] = values["R@10"]
    pct = lambda ci: [round(100 * ci[0], 1), round(100 * ci[1], 1)]  # noqa: E731 (as the file rounds)
    masks = {h: np.array([t in names for t in theorems]) for h, names in halves.items()}
    for half, mask in masks.items():
        clusters = [t for t, m in zip(theorems, mask) if m]
        for row, r in rows.items():
            mean, ci = round(100 * float(r[mask].mean()), 1), pct(mean_interval(r[mask], clusters=clusters))
            out.append(f"{mean:.1f} [{ci[0]:.1f}, {ci[1]:.1f}]")
            w = result["retrieval"]["rows"][row][half]
            if [mean, *ci] != [w["R@10"], *w["ci"]]:
                bad.append(f"{stem}: {row} on {half} recomputes as {mean} {ci}, the file says {w['R@10']} {w['ci']}")
    mask = masks["report"]
    clusters = [t for t, m in zip(theorems, mask) if m]
    for c in result["retrieval"].get("report_comparisons", []):
        ci = getattr(paired_intervals(rows[c["a"]][mask], rows[c["b"]][mask], clusters=clusters), c["stat"])
        ci = [round(ci[0], 3), round(ci[1], 3)] if c["stat"] == "ratio" else pct(ci)
        out.append(f"[{ci[0]:.2f}, {ci[1]:.2f}]" if c["stat"] == "ratio" else f"[{ci[0]:+.1f}, {ci[1]:+.1f}]")
        if ci != c["ci"]:
            bad.append(f"{stem}: {c['a']} − {c['b']} ({c['stat']}) recomputes as {ci}, the file says {c['ci']}")
    return all_numbers("\n".join(out)), bad


def _rates(theorems: list[dict], name: str) -> np.ndarray:
    return np.asarray([t.get(name) == "proved" for t in theorems], dtype=np.float64)


def _per_theorem(stem: str, result: dict) -> tuple[set[str], list[str]]:
    """search-replay's rows from each theorem's outcome: each row's rate and interval, each
    written comparison's paired difference."""
    out, bad = [], []
    proved = {r["row"]: _rates(result["per_theorem"], r["row"]) for r in result["rows"]}
    for r in result["rows"]:
        x = proved[r["row"]]
        ci = mean_interval(x)
        out.append(_fmt(float(x.mean()), ci))
        if not (_close(float(x.mean()), r["rate"], 1e-6) and all(_close(a, b, 1e-6) for a, b in zip(ci, r["rate_ci"]))):
            bad.append(f"{stem}: {r['row']} recomputes as {x.mean():.6f} {ci}, the file says {r['rate']} {r['rate_ci']}")
    for c in result.get("comparisons", []):
        d = paired_intervals(proved[c["a"]], proved[c["b"]]).diff
        diff = float(proved[c["a"]].mean() - proved[c["b"]].mean())
        out.append(_fmt(diff, d, signed=True))
        if not all(_close(a, b, 1e-6) for a, b in zip([diff, *d], [c["diff"], *c["diff_ci"]])):
            bad.append(f"{stem}: {c['a']} − {c['b']} recomputes as {diff:.6f} {d}, the file says {c['diff']} {c['diff_ci']}")
    return all_numbers("\n".join(out)), bad


def _version(path: str, written_at: str) -> dict | None:
    """The committed version of results file `path` that a run at commit `written_at` wrote
    (its `git_commit`): the file as it is, else the newest version in git's history that says
    so; None when there is none."""
    import subprocess
    here = REPO / path
    if here.is_file() and json.loads(here.read_text()).get("git_commit") == written_at:
        return json.loads(here.read_text())
    log = subprocess.run(["git", "log", "--format=%H", "--", path], capture_output=True, text=True, cwd=REPO)
    for commit in log.stdout.split():
        out = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True, cwd=REPO)
        if out.returncode == 0 and json.loads(out.stdout).get("git_commit") == written_at:
            return json.loads(out.stdout)
    return None


def _replay_compare(stem: str, result: dict) -> tuple[set[str], list[str]]:
    """A replay comparison's rows (benchmarks/replay_compare.py), from its two search-replay
    files' per-theorem outcomes as committed at the commits it names: each side's rate and
    interval, and the paired difference over the theorems both hold."""
    now = _version(result["file"], result["now_commit"])
    base = _version(result["base_file"], result["base_commit"])
    if now is None or base is None:
        return set(), [f"{stem}: no committed version of {result['file']} written at {result['now_commit']} "
                       f"or of {result['base_file']} written at {result['base_commit']}"]
    a = {t["key"]: t for t in now["per_theorem"]}
    b = {t["key"]: t for t in base["per_theorem"]}
    keys = [k for k in a if k in b]
    out, bad = [], []
    for r in result["rows"]:
        x, y = _rates([a[k] for k in keys], r["row"]), _rates([b[k] for k in keys], r["row"])
        got = {"now": (float(x.mean()), mean_interval(x)), "base": (float(y.mean()), mean_interval(y)),
               "diff": (float(x.mean() - y.mean()), paired_intervals(x, y).diff)}
        for side, (mean, ci) in got.items():
            out.append(_fmt(mean, ci, signed=side == "diff"))
            if not (_close(mean, r[side], 1e-6) and all(_close(p, q, 1e-6) for p, q in zip(ci, r[f"{side}_ci"]))):
                bad.append(f"{stem}: {r['row']} {side} recomputes as {mean:.6f} {ci}, the file says "
                           f"{r[side]} {r[f'{side}_ci']}")
    return all_numbers("\n".join(out)), bad


TRAINING_KEYS = ("model_training", "generator_training", "trained", "training")


def _training_numbers(result: dict) -> set[str]:
    """The numbers of the training records a file holds (a model's steps, its CPU time): facts
    of the models it scored, not averages over its queries, so a page may quote them beside
    the recomputed ones."""
    held = [result.get(k) for k in TRAINING_KEYS]
    held += [r.get(k) for r in result.get("rows") or [] if isinstance(r, dict) for k in TRAINING_KEYS]
    held += [c.get("models") for c in result.get("corrections") or [] if isinstance(c, dict)]
    return all_numbers(json.dumps([h for h in held if h]))


def recompute(stem: str, results: Path = RESULTS_DIR) -> tuple[str, set[str], list[str]]:
    """(how, numbers, disagreements) for one results file; `how` starts with "recomputed" when
    its numbers were recomputed from per-query data (with the numbers of the training records
    it holds)."""
    how, numbers, bad = _recompute(stem, results)
    if how.startswith("recomputed"):
        # and the bootstrap's own settings: its level (95%), resamples and seed
        from retriever.evaluation.bootstrap import N_RESAMPLES, SEED
        numbers = numbers | _training_numbers(json.loads((results / f"{stem}.json").read_text())) | all_numbers(
            f"95 {N_RESAMPLES} {SEED}")
    return how, numbers, bad


def _recompute(stem: str, results: Path) -> tuple[str, set[str], list[str]]:
    result = json.loads((results / f"{stem}.json").read_text())
    named = result.get("per_query")
    if isinstance(named, str) and (results / named).is_file():
        numbers, bad = _per_query_rows(stem, result, read_per_query(named, results))
        return f"recomputed from {named}", numbers, bad
    if isinstance(named, list) and named and isinstance(named[0], dict) and "metrics" in named[0]:
        numbers, bad = _per_query_rows(stem, result, _embedded(named))
        return "recomputed from the per-query records the file holds (`per_query`)", numbers, bad
    if result.get("benchmark") == "generator" and (results / "outcomes" / f"{stem}-none.jsonl.gz").is_file():
        numbers, bad = _generator(stem, result, results)
        return f"recomputed from outcomes/{stem}-*.jsonl.gz", numbers, bad
    if result.get("benchmark") == "retrieval" and any(
            (results / "rankings" / f"{stem}-{r['retriever']}.jsonl.gz").is_file() for r in result["rows"]):
        numbers, bad = _rankings(stem, result, results)
        return f"recomputed from rankings/{stem}-*.jsonl.gz", numbers, bad
    if result.get("benchmark") == "real-halves":
        numbers, bad = _halves(stem, result, results)
        return ("recomputed from rankings/retrieval-mathlib-src-leandojo-real-val-cpu-*.jsonl.gz cut by the "
                "committed halves (its retrieval rows)"), numbers, bad
    if isinstance(result.get("per_theorem"), list) and result["per_theorem"]:
        numbers, bad = _per_theorem(stem, result)
        return "recomputed from each theorem's outcome the file holds (`per_theorem`)", numbers, bad
    if result.get("benchmark") == "replay_compare" and result.get("file") and result.get("base_file"):
        numbers, bad = _replay_compare(stem, result)
        return (f"recomputed from the per-theorem outcomes of {result['file']} and {result['base_file']} "
                f"(the versions written at {result['now_commit'][:10]} and {result['base_commit'][:10]})"), numbers, bad
    own = all_numbers((results / f"{stem}.json").read_text())
    md = results / f"{stem}.md"
    own |= all_numbers(md.read_text()) if md.is_file() else set()
    missing = declared_missing(result)
    why = (f"read as the file writes them: no per-query data ({missing.get('missing', '')} "
           f"Regenerate: `{missing.get('regenerate', '')}`)") if missing else \
        "read as the file writes them (its per-query data are in a form this command does not read)"
    return why, own, []


_COMMITTED: dict[str, tuple[str, set[str], list[str]]] = {}  # the committed files' recomputations, once a process


def check(readme: str, results: Path = RESULTS_DIR) -> tuple[list[str], list[str]]:
    """(report lines, problems) for README text `readme`."""
    section = results_section(readme)
    stems = {p.stem for p in results.glob("*.json")}
    files = cited(section, stems)
    index: dict[str, set[str]] = {HEADLINE: set()}
    report, problems = [], []
    for stem in files:
        if results == RESULTS_DIR:
            if stem not in _COMMITTED:
                _COMMITTED[stem] = recompute(stem, results)
            how, numbers, bad = _COMMITTED[stem]
        else:
            how, numbers, bad = recompute(stem, results)
        index[stem] = numbers
        report.append(f"{stem}: {how}")
        problems += bad
    for stem in stems - set(files):
        index[stem] = set()
    problems += violations(section, index, "README.md Results")
    return report, problems


def main(argv: list[str] | None = None) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--require-all", action="store_true",
                   help="also fail when a cited file's numbers could not be recomputed from per-query data")
    args = p.parse_args(argv)
    report, problems = check(README.read_text())
    print("\n".join(report))
    not_recomputed = [r.split(":", 1)[0] for r in report if not r.split(": ", 1)[1].startswith("recomputed")]
    if args.require_all and not_recomputed:
        problems += [f"{stem}: not recomputed from per-query data" for stem in not_recomputed]
    if problems:
        print("\nproblems:\n" + "\n".join(problems))
        return 1
    print(f"\nevery number in README.md's Results section is among its files' numbers "
          f"({len(report) - len(not_recomputed)} of {len(report)} files recomputed from per-query data"
          + (f"; not: {', '.join(not_recomputed)}" if not_recomputed else "") + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
