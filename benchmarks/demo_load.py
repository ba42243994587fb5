"""Does `prover demo` prove the same theorems on a busy machine as on a quiet one?

    python benchmarks/demo_load.py [--busy 2] [--timeout 1500]

Runs `prover demo` twice as a user would (a new process, a fresh output folder each): first as
the machine is, then with `--busy` CPU-bound busy loops (`python -c "while True: pass"`) beside
it. Records each run's proved theorems, stage times, per-theorem search nodes, stop reasons and
generation seconds, and the load average before and during each run ("quiet" is relative: the
machine may be running other jobs). The demo's search is bounded by expansions, so the proved
sets should be equal; the busy run is slower in proportion to the load.

Writes benchmarks/results/demo-load.{json,md}.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from prover.benchmarking.harness import (add_allow_dirty, command_line, machine, parser, require_clean_tree,
                                         write_results)

BUSY_LOOP = "while True: pass"


class LoadSampler:
    """The 1-minute load average, sampled every few seconds while a run lasts."""

    def __init__(self, every_s: float = 5.0) -> None:
        self.every_s = every_s
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def run_demo(out_dir: Path, env: dict, timeout_s: float) -> dict:
    """One `prover demo` into `out_dir`: what it proved, its times, and the load while it ran."""
    before = os.getloadavg()[0]
    t = time.perf_counter()
    with LoadSampler() as load:
        done = subprocess.run([sys.executable, "-m", "prover.cli", "demo", f"out_dir={out_dir}"],
                              capture_output=True, text=True, env=env, timeout=timeout_s)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"prover demo failed ({done.returncode}):\n{done.stderr[-3000:]}")
    demo = json.loads((out_dir / "demo.json").read_text())
    results = next((out_dir / "search").glob("*/results.jsonl"))
    records = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    records.sort(key=lambda r: r["key"])
    return {
        "wall_s": round(wall, 1), "stage_s": demo["seconds"],
        "load_before": round(before, 2),
        "load_during_mean": round(sum(load.samples) / len(load.samples), 2) if load.samples else None,
        "load_during_max": round(max(load.samples), 2) if load.samples else None,
        "proved": sorted(r["key"] for r in records if r["status"] == "proved"),
        "theorems": [{"key": r["key"], "status": r["status"], "stop_reason": r["stop_reason"],
                      "expansions": r["expansions"], "generation_s": r["times"]["generation_s"]}
                     for r in records],
    }


def with_busy_loops(n: int, fn: Any, *args: Any) -> Any:
    """`fn(*args)` with `n` busy-loop processes running beside it; they are stopped after."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(n)]
    try:
        return fn(*args)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def machine_line(m: dict) -> str:
    return f"{m.get('cpu', '?')}, {m.get('cpu_count', '?')} cores, torch {m.get('torch', '?')}, ray {m.get('ray', '?')}"


def markdown(report: dict) -> str:
    quiet, busy = report["runs"]["quiet"], report["runs"]["busy"]
    lines = ["# `prover demo` on a quiet and on a busy machine", "",
             f"Commit {report['git_commit']}, {machine_line(report['machine'])}. The busy run had "
             f"{report['busy_loops']} CPU-bound busy loops beside it. \"Quiet\" is the machine as it "
             "was (other jobs may have been running: see the load).", "",
             "| run | wall s | CFR s | retrieval s | generator s | search s | load before | load during (mean / max) "
             "| proved | mean nodes | mean generation s / theorem |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in (("quiet", quiet), ("busy", busy)):
        s, th = r["stage_s"], r["theorems"]
        lines.append(f"| {name} | {r['wall_s']} | {s['train CFR']} | {s['retrieval']} | {s['train generator']} | "
                     f"{s['search']} | {r['load_before']} | {r['load_during_mean']} / {r['load_during_max']} | "
                     f"{len(r['proved'])} of {len(th)} | {sum(t['expansions'] for t in th) / len(th):.1f} | "
                     f"{sum(t['generation_s'] for t in th) / len(th):.2f} |")
    lines += ["", f"Same proved theorems: **{report['same_proved']}** "
              f"({', '.join(quiet['proved']) or 'none'}). Same expansions per theorem: "
              f"**{report['same_expansions']}**.", "",
              "| theorem | quiet: status, stop, nodes | busy: status, stop, nodes |", "|---|---|---|"]
    for q, b in zip(quiet["theorems"], busy["theorems"]):
        lines.append(f"| {q['key'].split('::')[-1]} | {q['status']}, {q['stop_reason']}, {q['expansions']} | "
                     f"{b['status']}, {b['stop_reason']}, {b['expansions']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--busy", type=int, default=2, help="busy-loop processes beside the second run")
    p.add_argument("--timeout", type=float, default=1500.0, help="seconds allowed per demo run")
    p.add_argument("--results-dir", default="benchmarks/results")
    add_allow_dirty(p)
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)  # before any work: a refused run costs nothing
    work = Path(tempfile.mkdtemp(prefix="demo-load-"))
    env = dict(os.environ)
    quiet = run_demo(work / "quiet", env, args.timeout)
    busy = with_busy_loops(args.busy, run_demo, work / "busy", env, args.timeout)
    report = {"git_commit": commit, "command": command_line(), "machine": machine(), "cpus": os.cpu_count(),
              "busy_loops": args.busy, "runs": {"quiet": quiet, "busy": busy},
              "same_proved": quiet["proved"] == busy["proved"],
              "same_expansions": [t["expansions"] for t in quiet["theorems"]]
              == [t["expansions"] for t in busy["theorems"]]}
    write_results(Path(args.results_dir) / "demo-load", report, markdown(report))
    print(markdown(report))
    return 0 if report["same_proved"] else 1


if __name__ == "__main__":
    sys.exit(main())
