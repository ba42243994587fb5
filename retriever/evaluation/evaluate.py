"""Evaluate a retriever on a split: per-query rankings (JSONL) and a metrics table.

The rankings file carries, per query, the gold premises, their modules and the ideal
same-module count next to the ranked names and modules, so every metric can be recomputed
from it alone, by anyone, without our code or the corpus.
"""
from __future__ import annotations

import gzip
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from prover.data.corpus import Corpus
from prover.data.pairs import PremiseQuery, same_module_count
from prover.utils.progress import progress_bar
from retriever.base import Retriever, TheoremContext
from retriever.evaluation.metrics import Judgement, aggregate, query_metrics

log = logging.getLogger(__name__)

# Metrics whose per-query values an EvalResult keeps, for bootstrap intervals.
CI_METRICS = ("R@10", "MRR")

TABLE_METRICS = ["R@1", "R@5", "R@10", "P@1", "P@5", "P@10", "F1@1", "F1@5", "F1@10",
                 "nDCG@1", "nDCG@5", "nDCG@10", "MRR"]


@dataclass
class EvalResult:
    retriever: str
    metrics: dict[str, float]
    n_queries: int
    retrieval_seconds: float
    extra: dict = field(default_factory=dict)
    # Per-query values of CI_METRICS, in query order (queries without gold left out); not
    # written by as_dict: the rankings file holds them (see per_query_from_rankings).
    per_query: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def queries_per_second(self) -> float:
        return self.n_queries / self.retrieval_seconds if self.retrieval_seconds > 0 else float("nan")

    def as_dict(self) -> dict:
        return {"retriever": self.retriever, "metrics": self.metrics, "n_queries": self.n_queries,
                "retrieval_seconds": round(self.retrieval_seconds, 3),
                "queries_per_second": round(self.queries_per_second, 2), **self.extra}


def judge(q: PremiseQuery, corpus: Corpus) -> Judgement:
    accessible = corpus.accessible_mask(q.file_path, q.position)
    return Judgement(
        gold=frozenset(corpus.premises[i].full_name for i in q.gold),
        gold_modules=frozenset(corpus.module_of(i) for i in q.gold),
        n_same_module=same_module_count(corpus, q.gold, accessible),
    )


def evaluate(retriever: Retriever, queries: Sequence[PremiseQuery], ks: Sequence[int] = (1, 5, 10, 20, 50),
             rankings_k: int = 100, batch_size: int = 64,
             rankings_path: str | Path | None = None, desc: str | None = None) -> EvalResult:
    """Rank premises for every query, batch by batch; write rankings if a path is given.
    `desc` labels the progress bar (default: "<retriever>: rank premises")."""
    corpus = retriever.corpus
    per_query: list[dict | None] = []
    seconds = 0.0
    out = None
    if rankings_path is not None:
        rankings_path = Path(rankings_path)
        rankings_path.parent.mkdir(parents=True, exist_ok=True)
        out = (gzip.open(rankings_path, "wt", encoding="utf-8") if rankings_path.suffix == ".gz"
               else open(rankings_path, "w", encoding="utf-8"))
    k = max(rankings_k, max(ks))
    # One batch is one step: no bar for it.
    bar = progress_bar(total=len(queries), desc=desc or f"{retriever.name}: rank premises", unit="query",
                       disable=len(queries) <= batch_size)
    try:
        for lo in range(0, len(queries), batch_size):
            batch = queries[lo: lo + batch_size]
            t0 = time.perf_counter()
            ranked = retriever.retrieve([q.state for q in batch], k,
                                        [TheoremContext(q.file_path, q.position) for q in batch])
            seconds += time.perf_counter() - t0
            for q, hits in zip(batch, ranked):
                j = judge(q, corpus)
                names = [h.premise.full_name for h in hits]
                modules = [h.premise.path for h in hits]
                per_query.append(query_metrics(names, modules, j, ks))
                if out is not None:
                    out.write(json.dumps({
                        "theorem": q.theorem, "tactic_index": q.tactic_index,
                        "gold": sorted(j.gold), "gold_modules": sorted(j.gold_modules),
                        "n_same_module": j.n_same_module,
                        "ranked": names, "ranked_modules": modules,
                        "scores": [round(h.score, 5) for h in hits],
                    }, ensure_ascii=False) + "\n")
            bar.update(len(batch))
    finally:
        bar.close()
        if out is not None:
            out.close()
    metrics = {key: round(v, 6) for key, v in aggregate(per_query).items()}
    return EvalResult(retriever.name, metrics, len(queries), seconds,
                      per_query=_per_query_arrays(per_query))


def _per_query_arrays(per_query: Sequence[dict | None]) -> dict[str, np.ndarray]:
    scored = [m for m in per_query if m is not None]
    return {c: np.array([m[c] for m in scored]) for c in CI_METRICS if scored and c in scored[0]}


def per_query_from_rankings(path: str | Path, ks: Sequence[int] = (10,)
                            ) -> tuple[list[tuple[str, int]], dict[str, np.ndarray]]:
    """(theorem, tactic index) of each query and its CI_METRICS, recomputed from a rankings
    file alone: how a resumed benchmark gets per-query values of rows it did not rerun."""
    keys, per_query = [], []
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            j = Judgement(frozenset(r["gold"]), frozenset(r["gold_modules"]), r["n_same_module"])
            m = query_metrics(r["ranked"], r["ranked_modules"], j, ks)
            if m is not None:
                keys.append((r["theorem"], r["tactic_index"]))
                per_query.append(m)
    return keys, _per_query_arrays(per_query)


def latency(retriever: Retriever, queries: Sequence[PremiseQuery], n: int, k: int = 100) -> dict:
    """Per-query wall time at batch size 1, over the first n queries."""
    times = []
    for q in queries[:n]:
        t0 = time.perf_counter()
        retriever.retrieve([q.state], k, [TheoremContext(q.file_path, q.position)])
        times.append(time.perf_counter() - t0)
    if not times:
        return {}
    ms = np.array(times) * 1000
    return {"latency_ms_p50": round(float(np.percentile(ms, 50)), 2),
            "latency_ms_p95": round(float(np.percentile(ms, 95)), 2), "latency_queries": len(times)}


def markdown_table(rows: Sequence[dict], title: str = "") -> str:
    """Rows are `EvalResult.as_dict()` outputs; metrics shown as percentages except MRR and nDCG."""
    cols = TABLE_METRICS + ["queries/s", "p50 ms", "p95 ms", "index s", "params M", "GFLOPs/q"]
    lines = [f"## {title}", ""] if title else []
    lines.append("| retriever | " + " | ".join(cols) + " |")
    lines.append("|---" * (len(cols) + 1) + "|")
    for r in rows:
        m = r["metrics"]
        cells = []
        for c in TABLE_METRICS:
            v = m.get(c)
            fmt = _fmt(c)
            ci = r.get(f"{c}_ci")
            cells.append("" if v is None else fmt(v) + (f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else ""))
        cells += [f"{r.get('queries_per_second', float('nan')):.1f}",
                  str(r.get("latency_ms_p50", "")), str(r.get("latency_ms_p95", "")),
                  str(r.get("index_seconds", "")),
                  f"{r['parameters'] / 1e6:.2f}" if "parameters" in r else "",
                  str(r.get("gflops_per_query", ""))]
        lines.append(f"| {r['retriever']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _fmt(metric: str) -> Callable[[float], str]:
    """How a metric's value is shown: nDCG and MRR as fractions, the rest in %."""
    return (lambda v: f"{v:.3f}") if metric.startswith(("nDCG", "MRR")) else (lambda v: f"{100 * v:.1f}")


# Row comparisons the benchmark adds (retriever/evaluation/benchmark.py): field, column, formatter.
COMPARISONS = [("R@10_ratio_to_bm25_ci", "R@10 ÷ bm25", lambda v: f"{v:.2f}"),
               ("R@10_diff_to_locality_ci", "R@10 − locality (points)", lambda v: f"{100 * v:+.1f}"),
               ("R@10_diff_to_best_baseline_ci", "R@10 − best no-learning row (points)",
                lambda v: f"{100 * v:+.1f}"),
               ("R@10_gain_over_first_stage_ci", "R@10 gain of CAR over its first stage (points)",
                lambda v: f"{100 * v:+.1f}")]


def comparison_table(rows: Sequence[dict]) -> str:
    """95% paired-bootstrap intervals of each row against the reference rows, where present."""
    present = [c for c in COMPARISONS if any(c[0] in r for r in rows)]
    if not present:
        return ""
    lines = ["| retriever | " + " | ".join(col for _, col, _ in present) + " |",
             "|---" * (len(present) + 1) + "|"]
    for r in rows:
        cells = [f"[{f(r[key][0])}, {f(r[key][1])}]" if r.get(key) else "" for key, _, f in present]
        lines.append(f"| {r['retriever']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def robustness_table(rows: Sequence[dict]) -> str:
    """R@10 under the paper's perturbations, with the relative change."""
    lines = ["| retriever | shuffled hyps R@10 | change | 20% hyps dropped R@10 (n) | change |",
             "|---|---|---|---|---|"]
    for r in rows:
        rob = r.get("robustness")
        if not rob:
            continue
        cells = []
        for kind in ("shuffle", "drop"):
            x = rob.get(kind)
            if not x:
                cells += ["", ""]
                continue
            n = f" ({x['n_queries']})" if kind == "drop" else ""
            change = x.get("R@10_rel_change")
            cells += [f"{100 * x['R@10']:.1f}{n}", "" if change is None else f"{100 * change:+.1f}%"]
        lines.append(f"| {r['retriever']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def _warmup_steps(summary: dict) -> int | None:
    """A stage summary's warm-up length: its own field, or its recorded config's (older files)."""
    if summary.get("warmup_steps") is not None:
        return int(summary["warmup_steps"])
    for section in ("car", "config"):
        node = summary.get(section) or {}
        for sub in (node, node.get("pretrain") or {}, node.get("reprover") or {}):
            if isinstance(sub, dict) and sub.get("warmup_steps") is not None:
                return int(sub["warmup_steps"])
    return None


def under_trained(row: dict) -> str | None:
    """Why a trained row is not a baseline yet (a stage that stopped inside its LR warm-up),
    or None. Such a row is marked in every table, and no comparison is drawn from it."""
    for stage, summary in (row.get("training") or {}).items():
        if summary is None:
            return f"{stage} missing"
        warmup, steps = _warmup_steps(summary), summary.get("steps")
        if warmup is not None and isinstance(steps, int) and steps < warmup:
            return f"{stage}: {steps} steps, warm-up {warmup}"
    return None


def training_table(rows: Sequence[dict]) -> str:
    """Training spent on each trained row: the same-budget claim, stated per stage."""
    lines = ["| retriever | stage | steps | wall minutes | CPU minutes | stopped by |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        for stage, summary in (r.get("training") or {}).items():
            if summary is None:
                lines.append(f"| {r['retriever']} | {stage} | missing | | | |")
                continue
            # `seconds`/`cpu_seconds` in every stage's summary.json; CAR's and ReProver's before
            # issue 40 said `train_seconds` (and CAR `train_cpu_seconds`): still read.
            seconds = summary.get("seconds", summary.get("train_seconds"))
            minutes = f"{seconds / 60:.1f}" if isinstance(seconds, (int, float)) else ""
            cpu = summary.get("cpu_seconds", summary.get("train_cpu_seconds"))
            cpu_minutes = f"{cpu / 60:.1f}" if isinstance(cpu, (int, float)) else ""
            # A run that wrote its summary stopped at its end or at its budget: no third way.
            stopped = summary.get("stopped_by") or ("end" if summary.get("done") else "budget")
            lines.append(f"| {r['retriever']} | {stage} | {summary.get('steps', '')} | {minutes} | {cpu_minutes} | "
                         f"{stopped} |")
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""
