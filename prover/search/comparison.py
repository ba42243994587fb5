"""The table a retriever comparison is for: per run, proved of attempted and pass@1 with a 95%
interval, and its paired difference with the `none` and `reprover` runs over the same theorems.

- The interval of one rate is Wilson's score interval (exact enough at MiniF2F's 244 theorems,
  never outside [0, 1], and defined at 0 and n proved).
- A paired difference counts the theorems only one of the two runs proves (b: only this run,
  c: only the other) over the theorems both attempted; its p-value is McNemar's exact two-sided
  test, the binomial test of b against b + c discordant theorems at one half. Theorems are the
  unit: no tactic-level pseudo-replication.
- Every counted proof went through the one verdict (prover/env/verdict.py); the table says
  which of its checks every proof of the run passed (the intersection of their `checks`).

ReProver's published numbers sit beside the table, marked as literature (`LITERATURE`).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

PROVED = "proved"
BASELINES = ("none", "reprover")
Z95 = 1.959963984540054

# Published pass@1 of ReProver, for the reader's orientation only: other data, other Lean.
LITERATURE = [
    {"what": "ReProver, LeanDojo Benchmark (Lean 3), random split", "pass@1": 51.2,
     "source": "Yang et al., LeanDojo, NeurIPS 2023 Datasets and Benchmarks"},
    {"what": "ReProver, LeanDojo Benchmark (Lean 3), novel_premises split", "pass@1": 26.3,
     "source": "Yang et al., LeanDojo, NeurIPS 2023 Datasets and Benchmarks"},
    {"what": "ReProver, MiniF2F test (Lean 3), 68 of 245 proved", "pass@1": 27.8,
     "source": "ReProver's evaluation log, lean-dojo/ReProver logs/eval_reprover_minif2f_test_8gpus.out (353942e)"},
]


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson's 95% score interval for k successes of n (None for n = 0)."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs (1.0 when there are none)."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def outcomes(records: Iterable[dict]) -> dict[str, bool]:
    """Theorem key -> proved, over the latest record of each theorem."""
    return {r["key"]: r["status"] == PROVED for r in {r["key"]: r for r in records}.values()}


def paired(this: dict[str, bool], other: dict[str, bool]) -> dict:
    """This run against another over the theorems both attempted."""
    common = sorted(set(this) & set(other))
    b = sum(this[k] and not other[k] for k in common)
    c = sum(other[k] and not this[k] for k in common)
    n = len(common)
    return {"theorems": n, "only_this": b, "only_other": c,
            "difference_points": round(100 * (b - c) / n, 2) if n else None,
            "mcnemar_p": round(mcnemar_exact(b, c), 4)}


def checks_passed(records: Iterable[dict]) -> list[str] | None:
    """The checks every counted proof's verdict passed (None: no proof counted)."""
    sets = [set((r.get("check") or {}).get("checks") or ()) for r in {r["key"]: r for r in records}.values()
            if r["status"] == PROVED]
    if not sets:
        return None
    return sorted(set.intersection(*sets))


def compare(runs: dict[str, list[dict]], retriever_of: dict[str, str]) -> dict[str, dict]:
    """Per run (name -> its records): proved of attempted, pass@1 with its interval, paired
    differences with the `none` and `reprover` runs, the checks its proofs passed."""
    results = {name: outcomes(records) for name, records in runs.items()}
    base = {r: name for name, r in retriever_of.items() if r in BASELINES}
    out = {}
    for name, res in results.items():
        proved, n = sum(res.values()), len(res)
        lo_hi = wilson(proved, n)
        row = {"retriever": retriever_of.get(name), "proved": proved, "attempted": n,
               "pass@1": round(proved / n, 4) if n else None,
               "interval95": [round(v, 4) for v in lo_hi] if lo_hi else None,
               "checks": checks_passed(runs[name])}
        for b, other in base.items():
            if other != name:
                row[f"vs_{b}"] = paired(res, results[other])
        out[name] = row
    return out


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _vs(p: dict | None) -> str:
    if not p:
        return "–"
    if not p["theorems"]:
        return "no common theorems"
    return (f"{p['difference_points']:+.1f} pts ({p['only_this']} vs {p['only_other']} only one proves "
            f"of {p['theorems']}; McNemar p {p['mcnemar_p']:.3g})")


def markdown(rows: dict[str, dict], label: str = "pass@1") -> list[str]:
    lines = [f"| run | proved / attempted | {label} % [95%] | − none | − reprover | checks every proof passed |",
             "|---|---|---|---|---|---|"]
    for name, r in sorted(rows.items()):
        interval = f" [{_pct(r['interval95'][0])}, {_pct(r['interval95'][1])}]" if r["interval95"] else ""
        checks = ", ".join(r["checks"]) if r["checks"] else "–"
        lines.append(f"| {name} | {r['proved']} / {r['attempted']} | {_pct(r['pass@1'])}{interval} "
                     f"| {_vs(r.get('vs_none'))} | {_vs(r.get('vs_reprover'))} | {checks} |")
    return lines


# Said beside the table: what was looked for and not found.
LITERATURE_NOTE = ("No pass@1 of ReProver on LeanDojo Benchmark 4 (Lean 4) is published in ReProver's README "
                   "or the LeanDojo paper that we found; its Lean 4 checkpoints come without one.")


def literature_markdown() -> list[str]:
    lines = ["Published, for orientation (literature: other data, other Lean; not comparable row by row):", "",
             "| what | pass@1 % | source |", "|---|---|---|"]
    lines += [f"| {x['what']} | {x['pass@1']} | {x['source']} |" for x in LITERATURE]
    return [*lines, "", LITERATURE_NOTE]
