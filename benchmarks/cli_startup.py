"""How long the `prover` command takes to answer a mistake, and the whole default job.

    python benchmarks/cli_startup.py [--repeats 10] [--demo]

Each case runs `prover ...` as a new process, as a user types it, and times it from start to
exit (wall clock). A mistake in the arguments or the config is answered before torch and
transformers load (about 4.5 s here), so its time is Python's start-up plus the config schema.
`--demo` also times one full `prover demo` (about a minute) in a fresh output folder.

Writes benchmarks/results/cli-startup.{json,md}.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from prover.benchmarking.harness import git_commit, machine, parser, write_results

# (label, arguments, expected exit code)
CASES = [
    ("bare word instead of key=value", ["demo", "foo"], 2),
    ("unknown config key", ["demo", "retriever.name=bm26"], 2),
    ("unknown retriever name", ["demo", "retrievers=[bm26]"], 2),
    ("help", ["--help"], 0),
]


def time_once(args: list[str], cwd: str, env: dict) -> tuple[float, int, str, str]:
    """Seconds, exit code, first line of stderr, stdout."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "prover.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)
    return (time.perf_counter() - t, done.returncode, (done.stderr.strip().splitlines() or [""])[0],
            done.stdout)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--demo", action="store_true", help="also time one full `prover demo`")
    p.add_argument("--results-dir", default="benchmarks/results")
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="cli-startup-")
    env = {**os.environ, "HOME": work, "PROVER_CACHE": str(Path(work) / "cache")}
    rows = []
    for label, cli_args, expected in CASES:
        runs = [time_once(cli_args, work, env) for _ in range(args.repeats)]
        codes = {code for _, code, _, _ in runs}
        if codes != {expected}:
            raise SystemExit(f"{label}: exit codes {codes}, expected {expected}: {runs[0][2]}")
        seconds = sorted(s for s, _, _, _ in runs)
        rows.append({"case": label, "command": "prover " + " ".join(cli_args), "exit_code": expected,
                     "first_stderr_line": runs[0][2], "repeats": len(runs),
                     "median_s": round(statistics.median(seconds), 3), "max_s": round(seconds[-1], 3)})
        print(f"{label}: median {rows[-1]['median_s']:.3f} s, max {rows[-1]['max_s']:.3f} s")
    demo_stdout = None
    if args.demo:
        load_before = os.getloadavg()[0]
        seconds, code, first, demo_stdout = time_once(["demo", f"out_dir={work}/demo"], work, env)
        if code != 0:
            raise SystemExit(f"prover demo failed: {first}")
        rows.append({"case": "the default job (fresh HOME: builds the demo library, trains, searches)",
                     "command": "prover demo", "exit_code": 0, "first_stderr_line": "", "repeats": 1,
                     "median_s": round(seconds, 1), "max_s": round(seconds, 1),
                     "load_avg_1min_before": round(load_before, 2)})
        print(f"prover demo: {seconds:.1f} s")
    command = "python benchmarks/cli_startup.py " + " ".join(argv if argv is not None else sys.argv[1:])
    result = {"benchmark": "cli-startup", "command": command.strip(), "git_commit": git_commit(),
              "machine": machine(), "rows": rows, "demo_stdout": demo_stdout}
    out = Path(args.results_dir)
    lines = ["# `prover`: time to answer", "",
             "Wall time of a new process, from start to exit. Mistakes are answered before torch loads.", "",
             "| case | command | exit | median s | max s | first line of stderr |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | `{r['command']}` | {r['exit_code']} | {r['median_s']} | {r['max_s']} | "
                     f"{r['first_stderr_line'].replace('|', '/')} |")
    m = result["machine"]
    lines += ["", f"Machine: {m.get('cpu')} ({m.get('cpu_count')} cores). Commit {result['git_commit']}.",
              f"Command: `{result['command']}`", ""]
    if demo_stdout:
        lines += [f"What `prover demo` printed (1-minute load average before it: "
                  f"{rows[-1]['load_avg_1min_before']}; 2.0 means both cores were busy with other work):",
                  "", "```", demo_stdout.strip("\n"), "```", ""]
    write_results(out / "cli-startup", result, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
