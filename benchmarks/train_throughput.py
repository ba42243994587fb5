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
import statistics
import subprocess
import sys
import time
from pathlib import Path

from prover.config import load_config
from prover.data.jsonio import write_json
from prover.utils.runinfo import git_commit, machine
from retriever.settings import RetrieverTrainConfig
from retriever.train_car import car_run_dir

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
    """Median steps/s over training-log windows, dropping the first and any with an event or
    validation inside; also the steps and seconds those windows cover."""
    rates, steps, seconds, prev = [], 0, 0.0, None
    for line in log_path.read_text().splitlines():
        row = json.loads(line)
        if "loss" not in row or "event" in row or any(k.startswith("val_") for k in row):
            prev = None  # a window over a validation pass or a restart is not training
            continue
        if prev is not None and row["step"] > prev["step"] and row["time"] > prev["time"]:
            rates.append((row["step"] - prev["step"], row["time"] - prev["time"]))
        prev = row
    rates = rates[1:]
    if not rates:
        return None, 0, 0.0
    steps, seconds = sum(r[0] for r in rates), sum(r[1] for r in rates)
    return statistics.median(r[0] / r[1] for r in rates), steps, seconds


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/retriever/paper.yaml")
    p.add_argument("--minutes", type=float, default=1.0, help="training budget per stage")
    p.add_argument("--log-every", type=int, default=5, help="steps per log row (rate windows)")
    p.add_argument("--stages", default=",".join(STAGES))
    p.add_argument("--run-dir", default=None, help="default: a fresh folder under $PROVER_RUNS or runs/")
    p.add_argument("--results-dir", default=str(REPO / "benchmarks/results"))
    p.add_argument("--tag", default=None, help="results file suffix (default: cuda or cpu)")
    p.add_argument("overrides", nargs="*", help="config overrides, e.g. data.root=...")
    args = p.parse_args(argv)
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
        rate, steps, seconds = steady_rate(log_path) if log_path.exists() else (None, 0, 0.0)
        rows.append({"stage": stage, "git_commit": git_commit(), "exit_code": code, "wall_s": round(wall, 1), "steps_measured": steps,
                     "seconds_measured": round(seconds, 1),
                     "steps_per_s": None if rate is None else round(rate, 3),
                     "examples_per_step": per_step, "unit": unit,
                     "examples_per_s": None if rate is None else round(rate * per_step, 1)})
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
              "minutes_per_stage": args.minutes, "rows": rows, "command": command,
              "git_commit": git_commit(), "machine": info}
    md = [f"## Training throughput: `{args.config}` on {info.get('gpu', info['cpu'])}\n",
          "| stage | steps/s | examples/s | one step | steps measured | exit | commit |",
          "|---|---|---|---|---|---|---|"]
    md += [f"| {r['stage']} | {r['steps_per_s']} | {r['examples_per_s']} | {r['examples_per_step']} "
           f"{r['unit']} | {r['steps_measured']} in {r['seconds_measured']} s | {r['exit_code']} "
           f"| {r['git_commit'][:8]} |" for r in rows]
    md.append(f"\nEach stage trained {args.minutes} min (`max_minutes`); rates are medians over "
              f"{args.log_every}-step log windows, the first window and any with validation dropped. "
              f"Overrides: `{' '.join(args.overrides) or 'none'}`.\n\n"
              f"Commit {result['git_commit']}.\nCommand: `{command}`\n")
    stem.parent.mkdir(parents=True, exist_ok=True)
    write_json(stem.with_suffix(".json"), result)
    stem.with_suffix(".md").write_text("\n".join(md))
    print("\n".join(md))
    return 0 if all(r["exit_code"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
