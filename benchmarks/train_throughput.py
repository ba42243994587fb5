"""Training throughput of every retriever stage of a config, on this machine (CPU or GPU).

    python benchmarks/train_throughput.py --config configs/retriever/paper.yaml --minutes 1 \\
        data.root=$PROVER_DATA/mathlib-src-mini

Each stage (pretrain, train-cfr, train-car, train-reprover) runs as `prover retriever STAGE`
in a fresh run dir under a `max_minutes` budget, and its rate is read off its own
train_log.jsonl: steps between consecutive training rows over the time between them. Windows
with a validation or start event inside are dropped, and so is each stage's first window (CUDA
start-up, first batches), so the figure is the steady rate. Run it on a lent GPU before
booking a cluster: steps/s times the steps a full run needs gives its GPU-hours. The run is
also the check that every stage trains on the device at that size.

`--stages` reruns some stages (a later stage starts from the models of the earlier ones in the
same run dir); rows of the others are kept from the results file when config, overrides and
budget match, each row naming the commit it was measured at.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from prover.benchmarking.harness import git_commit, load_config, machine, parser, write_results
from retriever.models.car import car_run_dir
from retriever.settings import RetrieverTrainConfig

REPO = Path(__file__).resolve().parents[1]

# stage -> (config section, extra arguments, run subfolder)
STAGES: dict[str, tuple[str, list[str], str]] = {
    "pretrain": ("pretrain", [], "pretrain"),
    "train-cfr": ("cfr", ["cfr.eval_every=0"], "cfr"),
    "train-car": ("car", [], "car"),
    "train-reprover": ("reprover", [], "reprover"),
}


def examples_per_step(cfg: RetrieverTrainConfig, stage: str) -> tuple[int, str]:
    """What one optimizer step consumes, and in what unit."""
    if stage == "pretrain":
        return cfg.pretrain.batch_size * cfg.pretrain.grad_accum, "sequences"
    if stage == "train-cfr":
        return cfg.cfr.batch_size, "(state, premise) pairs"
    if stage == "train-car":
        return cfg.car.batch_size * cfg.car.grad_accum * (1 + cfg.car.negatives), "scored pairs"
    return cfg.reprover.batch_size, "examples"


def steady_rate(log_path: Path) -> tuple[float | None, int, float]:
    """Steps/s over the training-log windows, the first dropped and any with an event or
    validation inside; also the steps and seconds those windows cover. Steps over seconds in
    all, not a median of windows: a fast stage's 5-step window lasts a few log-time ticks."""
    windows, prev = [], None
    for line in log_path.read_text().splitlines():
        row = json.loads(line)
        if "loss" not in row or "event" in row or any(k.startswith("val_") for k in row):
            prev = None  # a window over a validation pass or a restart is not training
            continue
        if prev is not None and row["step"] > prev["step"] and row["time"] > prev["time"]:
            windows.append((row["step"] - prev["step"], row["time"] - prev["time"]))
        prev = row
    windows = windows[1:]
    steps, seconds = sum(w[0] for w in windows), sum(w[1] for w in windows)
    return (steps / seconds if seconds > 0 else None), steps, seconds


def kept_rows(path: Path, args: argparse.Namespace, new: list[dict]) -> list[dict]:
    """Rows of an earlier run of the same config, overrides and budget for the stages this run
    did not measure (a rerun of one stage after a fix keeps the others; each row names its commit)."""
    if not path.exists():
        return []
    old = json.loads(path.read_text())
    if (old.get("config"), old.get("overrides"), old.get("minutes_per_stage")) != (
            args.config, args.overrides, args.minutes):
        return []
    measured = {r["stage"] for r in new}
    return [{"git_commit": old["git_commit"], **r} for r in old["rows"] if r["stage"] not in measured]


def with_rates(row: dict) -> dict:
    """The row's rates from its own counts (steps_measured over seconds_measured)."""
    rate = row["steps_measured"] / row["seconds_measured"] if row["seconds_measured"] else None
    return {**row, "steps_per_s": None if rate is None else round(rate, 3),
            "examples_per_s": None if rate is None else round(rate * row["examples_per_step"], 1)}


def render(result: dict) -> str:
    info = result["machine"]
    md = [f"## Training throughput: `{result['config']}` on {info.get('gpu', info['cpu'])}\n",
          "| stage | steps/s | examples/s | one step | steps measured | exit | commit |",
          "|---|---|---|---|---|---|---|"]
    md += [f"| {r['stage']} | {r['steps_per_s']} | {r['examples_per_s']} | {r['examples_per_step']} "
           f"{r['unit']} | {r['steps_measured']} in {r['seconds_measured']} s | {r['exit_code']} "
           f"| {r['git_commit'][:8]} |" for r in result["rows"]]
    md.append(f"\nEach stage trained {result['minutes_per_stage']} min (`max_minutes`); a rate is the steps "
              f"of its {result.get('log_every', 5)}-step log windows over their seconds, the first window and any with validation "
              f"dropped. Overrides: `{' '.join(result['overrides']) or 'none'}`.\n")
    md.extend(f"{note}\n" for note in result.get("notes", []))
    md.append(f"\nCommit {result['git_commit']}.\nCommand: `{result['command']}`\n")
    return "\n".join(md)


def rerender(path: Path) -> None:
    """Rates of a results file recomputed from its rows' counts, and its table written again."""
    result = json.loads(path.read_text())
    result["rows"] = [with_rates(r) for r in result["rows"]]
    result.setdefault("notes", []).append(
        f"Rates recomputed from each row's steps and seconds by `python benchmarks/train_throughput.py "
        f"--render {path.name}` at {git_commit()}.")
    write_results(path.with_suffix(""), result, render(result))


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/retriever/paper.yaml")
    p.add_argument("--minutes", type=float, default=1.0, help="training budget per stage")
    p.add_argument("--log-every", type=int, default=5, help="steps per log row (rate windows)")
    p.add_argument("--stages", default=",".join(STAGES))
    p.add_argument("--run-dir", default=None, help="default: a fresh folder under $PROVER_RUNS or runs/")
    p.add_argument("--results-dir", default=str(REPO / "benchmarks/results"))
    p.add_argument("--tag", default=None, help="results file suffix (default: cuda or cpu)")
    p.add_argument("overrides", nargs="*", help="config overrides, e.g. data.root=...")
    p.add_argument("--render", default=None, metavar="JSON",
                   help="only recompute a results file's rates from its counts and rewrite its table")
    args = p.parse_args(argv)
    if args.render:
        rerender(Path(args.render))
        return 0
    cfg = load_config(RetrieverTrainConfig, args.config, args.overrides)
    run_dir = Path(args.run_dir or Path(os.environ.get("PROVER_RUNS", "runs")) /
                   f"throughput-{Path(args.config).stem}-{int(time.time())}")
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rows = []
    for stage in args.stages.split(","):
        section, extra, sub = STAGES[stage]
        if stage == "train-cfr" and cfg.car.first_stage == "cfr-conventional":
            extra, sub = [*extra, "cfr.similarity=conventional"], "cfr-conventional"  # the CFR CAR starts from
        if stage == "train-car":
            sub = car_run_dir(run_dir, cfg.car.first_stage).name
        cmd = [sys.executable, "-m", "prover.cli", "retriever", stage, "--config", args.config,
               f"run_dir={run_dir}", f"{section}.max_minutes={args.minutes}",
               f"{section}.log_every={args.log_every}", *extra, *args.overrides]
        print(f"[throughput] {stage}: {' '.join(cmd)}", flush=True)
        t0 = time.perf_counter()
        with open(logs / f"{stage}.log", "w") as out:
            code = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
        wall = time.perf_counter() - t0
        per_step, unit = examples_per_step(cfg, stage)
        log_path = run_dir / sub / "train_log.jsonl"
        _, steps, seconds = steady_rate(log_path) if log_path.exists() else (None, 0, 0.0)
        rows.append(with_rates({"stage": stage, "git_commit": git_commit(), "exit_code": code,
                                "wall_s": round(wall, 1), "steps_measured": steps,
                                "seconds_measured": round(seconds, 3), "examples_per_step": per_step,
                                "unit": unit}))
        print(f"[throughput] {stage}: exit {code}, {rows[-1]['steps_per_s']} steps/s, "
              f"{rows[-1]['examples_per_s']} {unit}/s ({wall:.0f} s)", flush=True)
        if code != 0:
            print((logs / f"{stage}.log").read_text()[-3000:], flush=True)
            break  # later stages start from this one's model
    info = machine()
    device = "cuda" if "gpu" in info else "cpu"
    tag = args.tag or device
    stem = Path(args.results_dir) / f"train-throughput-{Path(args.config).stem}-{tag}"
    command = " ".join(["python benchmarks/train_throughput.py", *(argv if argv is not None else sys.argv[1:])])
    rows = kept_rows(stem.with_suffix(".json"), args, rows) + rows
    rows.sort(key=lambda r: list(STAGES).index(r["stage"]))
    result = {"benchmark": "train-throughput", "config": args.config, "overrides": args.overrides,
              "minutes_per_stage": args.minutes, "log_every": args.log_every, "rows": rows, "command": command,
              "git_commit": git_commit(), "machine": info}
    md = render(result)
    stem.parent.mkdir(parents=True, exist_ok=True)
    write_results(stem, result, md)
    print(md)
    return 0 if all(r["exit_code"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
