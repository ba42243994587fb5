"""Per-theorem results files and the benchmark summary.

A run writes one JSON line per theorem to `<out_dir>/<run>/results.jsonl` the moment the
theorem finishes (append + fsync), so a killed worker, a crash or Ctrl-C loses at most the
theorems still running. A rerun reads the file and skips what is finished. A line cut short
by a kill mid-write is removed before appending, so the file stays one record per line.

The summary covers every run folder under `out_dir` (one per env and retriever), so running
the benchmark with another retriever into the same folder makes the comparison table. Rates
are over all theorems, with environment-start failures counted as failures and reported in
their own column. Results from the replay simulator are labelled "env: replay" and their rate
is a "replay proof rate": only Lean (env leandojo) gives pass@1.
"""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from prover.data.jsonio import append_jsonl, write_json
from prover.env.base import ENV_LEANDOJO, ENV_REPL, ENV_REPLAY
from prover.search.best_first import ERROR, PROVED, SearchResult
from prover.search.theorems import ProofTask, task_json

log = logging.getLogger(__name__)

RESULTS = "results.jsonl"
RUN_INFO = "run.json"
WORKER_LOST = "worker_lost"  # error kind of a theorem whose workers kept dying: retried on resume


def rate_label(env: str | None) -> str:
    """What a proved fraction is called in tables. Only Lean itself (env leandojo or repl) earns
    "pass@1"; the replay simulator's rate is not one, and an env we do not know (or none
    recorded, as in old results files) must not be promoted to pass@1 either."""
    if env in (ENV_LEANDOJO, ENV_REPL):
        return "pass@1"
    if env == ENV_REPLAY:
        return "replay proof rate"
    return f"proof rate (env {env or 'unknown'})"


def make_record(task: ProofTask, result: SearchResult, retriever: str, attempt: int,
                worker: str) -> dict:
    rec = task_json(task)
    rec.update(retriever=retriever, attempt=attempt, worker=worker, finished_at=time.time())
    rec.update(result.to_json())
    if result.status == ERROR:
        rec["error_kind"] = "env_start" if not result.env_started else "env_crash"
    return rec


def lost_record(task: ProofTask, env: str, retriever: str, attempts: int, message: str) -> dict:
    """A theorem given up on because the workers running it died `attempts` times."""
    rec = task_json(task)
    rec.update(retriever=retriever, attempt=attempts, worker=None, finished_at=time.time(),
               status=ERROR, env=env, proof=None, stop_reason=WORKER_LOST, expansions=0,
               env_started=True, error=message, error_kind=WORKER_LOST)
    return rec


class ResultsFile:
    """One run's append-only results (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def records(self) -> list[dict]:
        """Every complete record in file order. A final line without its newline (cut short by a
        kill) is left out; a bad line in the middle is a corrupt file and raises."""
        if not self.path.exists():
            return []
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        complete, tail = lines[:-1], lines[-1]
        out = []
        for i, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise ValueError(f"{self.path}: line {i} is not a JSON record ({e}); the file is "
                                 f"corrupt, not merely cut short") from None
        if tail.strip():
            log.warning("%s: ignoring an incomplete last line (%d bytes) left by an interrupted write",
                        self.path, len(tail))
        return out

    def latest(self) -> dict[str, dict]:
        """The last record of each theorem (a retried theorem can have several)."""
        return {r["key"]: r for r in self.records()}

    def finished_keys(self) -> set[str]:
        """Theorems a rerun skips: all with a record, except those lost to dying workers."""
        return {k for k, r in self.latest().items() if r.get("error_kind") != WORKER_LOST}

    def repair(self) -> None:
        """Drop an incomplete last line, so the next append starts on a line of its own."""
        if not self.path.exists():
            return
        raw = self.path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            keep = raw.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(keep)
                f.flush()
                os.fsync(f.fileno())
            log.warning("%s: removed an incomplete last line (%d bytes)", self.path, len(raw) - keep)

    def append(self, record: dict) -> None:
        append_jsonl(self.path, record)


def check_run_info(run_dir: Path, settings: dict, extra: dict) -> None:
    """Write run.json; on a rerun, refuse settings that differ from the first run's."""
    path = run_dir / RUN_INFO
    info = json.loads(path.read_text()) if path.exists() else {}
    saved = _named_now(info.get("settings"))
    if saved is not None and saved != settings:
        diff = sorted(k for k in set(saved) | set(settings) if saved.get(k) != settings.get(k))
        raise ValueError(f"{run_dir} holds results made with other settings ({', '.join(diff)} "
                         f"differ): use another --out or run name, or move that folder away")
    write_json(path, {**info, "settings": settings, **extra})  # the latest invocation's extras


def _named_now(saved: dict | None) -> dict | None:
    """Settings saved before tactics per expansion was one setting: `search.num_tactics` and
    `generator.num_samples` (null: the former) are `generator.num_tactics` now."""
    if not saved or "num_tactics" not in saved.get("search", {}):
        return saved
    search, generator = dict(saved["search"]), dict(saved.get("generator", {}))
    n = search.pop("num_tactics")
    generator["num_tactics"] = generator.pop("num_samples", None) or n
    return {**saved, "search": search, "generator": generator}


def guarantee_of(record: dict) -> str:
    """What stands behind a proved record (its verdict's guarantee); older records, without one,
    by their env: the REPL's said nothing, so nothing is claimed for them."""
    check = record.get("check") or {}
    if check.get("guarantee"):
        return check["guarantee"]
    return {ENV_LEANDOJO: "lean-dojo Dojo: no error, no sorry; no axioms answer, no kernel replay",
            ENV_REPLAY: "simulator: a recorded proof replayed, no Lean"}.get(record.get("env"), "not recorded")


def summarize_run(records: list[dict], expected: int | None = None) -> dict:
    """Counts and means over the latest record of each theorem."""
    latest = list({r["key"]: r for r in records}.values())
    env = latest[0]["env"] if latest else None
    n = len(latest)
    proved = [r for r in latest if r["status"] == PROVED]
    start_failed = [r for r in latest if r.get("error_kind") == "env_start"]
    crashed = [r for r in latest if r.get("error_kind") == "env_crash"]
    lost = [r for r in latest if r.get("error_kind") == WORKER_LOST]
    searched = [r for r in latest if r.get("env_started", True) and r.get("error_kind") != WORKER_LOST]

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    times = [r.get("times", {}) for r in searched]
    return {
        "env": env,
        "rate_label": rate_label(env),
        "theorems": n,
        "expected": expected,
        "proved": len(proved),
        "rate": round(len(proved) / n, 4) if n else None,  # env-start failures stay in the denominator
        "failed": sum(r["status"] == "failed" for r in latest),
        "errors": len(crashed),
        "env_start_failures": len(start_failed),
        "worker_lost": len(lost),
        "mean_nodes": mean([r["expansions"] for r in searched]),
        "mean_time_s": mean([t.get("total_s", 0.0) for t in times]),
        "mean_retrieval_s": mean([t.get("retrieval_s", 0.0) for t in times]),
        "mean_generation_s": mean([t.get("generation_s", 0.0) for t in times]),
        "mean_environment_s": mean([t.get("environment_s", 0.0) for t in times]),
        "proofs": {r["theorem"]: r["proof"] for r in proved},
        # What stands behind the proofs counted (each verdict's guarantee): the kernel replay,
        # NO kernel replay (the user's explicit setting), lean-dojo's Dojo, or the simulator.
        "guarantee": sorted({guarantee_of(r) for r in proved}),
        "retried": sum(r.get("attempt", 1) > 1 for r in latest),
    }


def summarize_dir(out_dir: str | Path) -> dict:
    """Every run folder under `out_dir`, for the per-retriever comparison."""
    from prover.search.comparison import compare
    out = Path(out_dir)
    runs = {}
    records_of: dict[str, list[dict]] = {}
    for results in sorted(out.glob(f"*/{RESULTS}")):
        info_path = results.parent / RUN_INFO
        info = json.loads(info_path.read_text()) if info_path.exists() else {}
        records = ResultsFile(results).records()
        row = summarize_run(records, info.get("theorems"))
        row["retriever"] = records[0]["retriever"] if records else info.get("settings", {}).get(
            "retriever", {}).get("name")
        row["run"] = results.parent.name
        if "batching" in info:
            row["batching"] = info["batching"]
        runs[results.parent.name] = row
        records_of[results.parent.name] = records
    # The comparison table: runs of one env side by side, paired over the same theorems.
    comparison: dict[str, dict] = {}
    for env in sorted({r["env"] or "unknown" for r in runs.values()}):
        names = [n for n, r in runs.items() if (r["env"] or "unknown") == env]
        comparison[env] = compare({n: records_of[n] for n in names}, {n: runs[n]["retriever"] for n in names})
    return {"out_dir": str(out), "runs": runs, "comparison": comparison}


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def markdown(summary: dict) -> str:
    """One table per env: replay rows never share a table (or a column name) with pass@1."""
    by_env: dict[str, list[dict]] = {}
    for row in summary["runs"].values():
        by_env.setdefault(row["env"] or "unknown", []).append(row)
    parts = ["# Proof search benchmark", ""]
    if summary.get("partial"):  # a generator its time budget stopped: not the recipe's model
        parts += ["PARTIAL models: " + "; ".join(f"{stage} {note}" for stage, note in
                                                summary["partial"].items()), ""]
    for env, rows in sorted(by_env.items()):
        label = rate_label(env)
        if env == ENV_REPLAY:
            parts += ["## env: replay (simulator)", "",
                      "The replay environment accepts only tactics recorded in traced proofs: these "
                      "numbers test the search machinery, not a prover. They are not pass@1.", ""]
        else:
            parts += [f"## env: {env}", ""]
        parts += [f"| retriever | theorems | proved | {label} | failed | errors | env start failures "
                  f"| mean nodes | mean time / theorem (s) | retrieval / generation / env (s) | checked by |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(rows, key=lambda r: r["retriever"] or ""):
            split = " / ".join(_fmt(r[k]) for k in ("mean_retrieval_s", "mean_generation_s",
                                                      "mean_environment_s"))
            rate = "–" if r["rate"] is None else f"{100 * r['rate']:.1f}%"
            theorems = f"{r['theorems']}" + (f" of {r['expected']}" if r.get("expected") and
                                             r["expected"] != r["theorems"] else "")
            errors = r["errors"] + r["worker_lost"]
            parts.append(f"| {r['retriever']} | {theorems} | {r['proved']} | {rate} | {r['failed']} "
                         f"| {errors} | {r['env_start_failures']} | {_fmt(r['mean_nodes'], 1)} "
                         f"| {_fmt(r['mean_time_s'])} | {split} | {'; '.join(r.get('guarantee') or []) or '–'} |")
        parts.append("")
        if summary.get("comparison", {}).get(env):
            from prover.search.comparison import markdown as comparison_markdown
            parts += [f"### {label} with 95% intervals, and paired with `none` and `reprover`", "",
                      "Wilson intervals; a paired difference counts the theorems only one of the two runs "
                      "proves, over those both attempted, with McNemar's exact two-sided p-value.", "",
                      *comparison_markdown(summary["comparison"][env], label), ""]
    if any(env in (ENV_LEANDOJO, ENV_REPL) for env in by_env):  # beside pass@1 only
        from prover.search.comparison import literature_markdown
        parts += [*literature_markdown(), ""]
    parts += ["Rates are over all theorems: a theorem whose environment failed to start counts as "
              "a failure (reported in its own column, not dropped from the denominator). Mean nodes "
              "and times are over theorems whose environment started.", ""]
    return "\n".join(parts)


def write_summary(out_dir: str | Path, extra: dict | None = None) -> dict:
    summary = {**summarize_dir(out_dir), **(extra or {})}
    out = Path(out_dir)
    write_json(out / "summary.json", summary)
    (out / "summary.md").write_text(markdown(summary), encoding="utf-8")
    return summary
