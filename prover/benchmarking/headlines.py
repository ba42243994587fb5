"""The headline numbers of one results file, read from its JSON and written as its Markdown
writes them (fractions as percentage points to one decimal, ratios to two, log-likelihoods in
nats to two), so a number cited from a results file's table can be found in the index. Every
interval carries its unit: `%` (a rate), `pts` (a difference of rates, in percentage points),
`×` (a ratio), `nats` (a difference of log-likelihoods)."""
from __future__ import annotations

from collections.abc import Callable

# The metric each row family reports first, with the key of its interval; the first one a row
# has is its headline.
ROW_METRICS = (("exact_match@8", "exact_match@8_ci"), ("exact_match@32", "exact_match@32_ci"),
               ("em@8", "ci"), ("em", "ci"), ("rate", "rate_ci"),
               ("value", "ci"), ("R@10", "R@10 95% CI"), ("now", "now_ci"))
# Intervals of a difference to some other row, as each family names them.
DIFF_KEYS = ("R@10_diff_to_best_baseline_ci", "minus shipped, 95% CI", "diff_ci")
COMPARISON_KEYS = ("comparisons", "select_comparisons", "report_comparisons")
# Metrics of the select/report scripts' rows, already in points.
SPLIT_METRICS = ("R@10", "EM@8", "rate")
# Sections of a file that combines benchmarks (real_halves.py), each shaped like a file.
SECTIONS = ("retrieval", "generator", "replay")
# Tables beside `rows` that list candidates tried, with R@10 columns (fusion_selection.py).
CANDIDATE_TABLES = ("member_sets", "neighbors_k")
# Rows reported beside the candidates tried (generator_neighbors_selection.py).
BASELINE_TABLES = ("baselines",)


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def pts(x: float, signed: bool = False) -> str:
    return f"{x:+.1f}" if signed else f"{x:.1f}"


UNITS = {"pct": "%", "pts": "pts", "ratio": "×", "nats": "nats"}


def interval(ci: list[float], fmt: Callable[[float], str], unit: str = "") -> str:
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]" + (f" {UNITS[unit]}" if unit else "")


def _nats(x: float) -> str:
    return f"{x:+.2f}"


def _is_loglik(metric: str | None) -> bool:
    return bool(metric) and ("loglik" in metric or "log-likelihood" in metric)


def _signed_pct(x: float) -> str:
    return f"{100 * x:+.1f}"


def _ratio(x: float) -> str:
    return f"{x:.2f}"


# The retrieval benchmark's intervals (retriever/evaluation/evaluate.py), labelled for the index.
RETRIEVAL_INTERVALS = (("R@10_ci", " ", pct, "pct"), ("R@10_ratio_to_bm25_ci", " ÷bm25 ", _ratio, "ratio"),
                       ("R@10_diff_to_best_baseline_ci", " −best ", _signed_pct, "pts"),
                       ("R@10_diff_to_locality_ci", " −locality ", _signed_pct, "pts"),
                       ("R@10_gain_over_first_stage_ci", " −first stage ", _signed_pct, "pts"))


def retrieval_values(r: dict) -> str:
    """A retriever's R@10 with the intervals its row has, as the retrieval benchmark's tables
    show them."""
    out = pct(r["metrics"]["R@10"])
    for key, label, fmt, unit in RETRIEVAL_INTERVALS:
        if r.get(key):
            out += f"{label}{interval(r[key], fmt, unit)}"
    return out


def _retrieval_row(r: dict) -> str:
    if "retriever" in r:
        name = r["retriever"]
    else:  # car_fusion.py's rows: one per (k1, weight)
        name = ("first stage alone" if not r.get("k1")
                else f"k1 {r['k1']}, w {r['first_stage_weight']:g}")
    return f"{name} {retrieval_values(r)}"


def _plain_row(r: dict) -> str | None:
    """A row of the generator, search, ablation and ceiling families: its first headline metric
    (a fraction) with its interval, and its difference to the row it is compared with."""
    for key, ci_key in ROW_METRICS:
        if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool):
            name = r.get("row", r.get("condition", "?"))
            out = f"{name} {pct(r[key])}"
            ci = r.get(ci_key) or r.get("ci")
            if ci:
                out += f" {interval(ci, pct, 'pct')}"
            diff = next((r[k] for k in DIFF_KEYS if r.get(k)), None)
            if diff:
                out += f" Δ {interval(diff, _signed_pct, 'pts')}"
            return out
    return None


def _split_value(v: dict) -> str | None:
    key = next((k for k in SPLIT_METRICS if k in v), None)
    if key is None:
        return None
    return f"{pts(v[key])}" + (f" {interval(v['ci'], pts, 'pct')}" if v.get("ci") else "")


def _split_rows(rows: dict) -> list[str]:
    """rows {name: {split: {"R@10": points, "ci": [lo, hi]}}} (the select/report scripts)."""
    out = []
    for name, by_split in rows.items():
        if not isinstance(by_split, dict):
            continue
        parts = [f"{split} {_split_value(v)}" for split, v in by_split.items()
                 if isinstance(v, dict) and _split_value(v)]
        if parts:
            out.append(f"{name}: {'; '.join(parts)}")
    return out


def _comparisons(result: dict, in_points: bool) -> list[str]:
    fmt = (lambda v: pts(v, signed=True)) if in_points else _signed_pct
    found = [c for key in COMPARISON_KEYS for c in result.get(key) or [] if isinstance(c, dict)]
    report = result.get("report")
    if isinstance(report, dict) and isinstance(report.get("comparison"), dict):
        found.append({**report["comparison"], "split": "report"})
    out = []
    for c in found:
        ci = c.get("ci") or c.get("diff_ci")
        if _is_loglik(c.get("metric")):
            shown, unit = _nats, "nats"
        elif c.get("stat") == "ratio":
            shown, unit = _ratio, "ratio"
        else:
            shown, unit = fmt, "pts"
        if ci and "a" in c and "b" in c:
            where = ", ".join(str(c[k]) for k in ("metric", "split") if c.get(k))
            where = f" ({where})" if where else ""
            out.append(f"{c['a']} − {c['b']}{where}: {interval(ci, shown, unit)}")
    return out


def _candidate(r: dict) -> str | None:
    """A candidate of a selection table: its name and every R@10 column (fractions)."""
    name = next((str(v) for v in r.values() if isinstance(v, (str, int))), "?")
    parts = [f"{k} {pct(v)}" for k, v in r.items() if "R@10" in k and isinstance(v, float)]
    parts += [f"{k} {interval(v, _signed_pct, 'pts')}" for k, v in r.items() if "CI" in k and isinstance(v, list)]
    return f"{name}: {'; '.join(parts)}" if parts else None


def _training_runs(runs: dict) -> list[str]:
    """cfr_runs.py's runs: steps, CPU seconds and the held-out MLM loss, as its table shows them."""
    out = []
    for name, r in runs.items():
        if not isinstance(r, dict):
            continue
        line = f"{name}: {r.get('steps')} steps, {r.get('cpu_seconds')} CPU-s"
        if "eval_loss" in r and "eval_loss_init" in r:
            line += f", held-out MLM loss {r['eval_loss_init']:.2f} → {r['eval_loss']:.2f}"
        out.append(line)
    return out


def _chosen(chosen: dict) -> str | None:
    """A chosen setting with its score (generator_neighbors_selection.py's `chosen`)."""
    if not isinstance(chosen.get("em"), float):
        return None
    setting = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                        for k, v in chosen.items() if k not in ("em", "ci"))
    return f"chosen ({setting}) {pct(chosen['em'])}" + (f" {interval(chosen['ci'], pct, 'pct')}" if chosen.get("ci") else "")


def headline(result: dict) -> list[str]:
    """One entry per row (and per paired comparison) the file reports; [] for files that measure
    something other than quality (startup, throughput, sizing)."""
    out: list[str] = []
    for section in SECTIONS:
        if isinstance(result.get(section), dict):
            out += [f"{section}: {h}" for h in headline(result[section])]
    for table in CANDIDATE_TABLES:
        if isinstance(result.get(table), list):
            out += [c for r in result[table] if isinstance(r, dict) and (c := _candidate(r))]
    for table in BASELINE_TABLES:
        if isinstance(result.get(table), list):
            out += [c for r in result[table] if isinstance(r, dict) and (c := _plain_row(r))]
    if isinstance(result.get("chosen"), dict) and (c := _chosen(result["chosen"])):
        out.append(c)
    if isinstance(result.get("runs"), dict):
        out += _training_runs(result["runs"])
    rows = result.get("rows")
    if isinstance(rows, dict):
        out += _split_rows(rows)
        if isinstance(result.get("report"), dict):
            out += _split_rows({k: {"report": v} for k, v in result["report"].items()
                                if isinstance(v, dict) and "R@10" in v})
        return out + _comparisons(result, in_points=True)
    for r in rows if isinstance(rows, list) else []:
        if not isinstance(r, dict):
            continue
        line = _retrieval_row(r) if isinstance(r.get("metrics"), dict) else _plain_row(r)
        if line:
            out.append(line)
    return out + _comparisons(result, in_points=False)
