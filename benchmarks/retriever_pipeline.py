"""Train every retriever of the comparison under the same budget, then benchmark them all.

    python benchmarks/retriever_pipeline.py [--config configs/retriever/small.yaml] [--run-dir DIR]
    python benchmarks/retriever_pipeline.py --strategy novel_premises   # models for novel_premises/test
    python benchmarks/retriever_pipeline.py --config configs/retriever/cpu-car.yaml  # cpu.yaml's stages and CAR

Stages run as `prover retriever ...` subprocesses, at most `--jobs` at a time (default 2, one
per core), each on ONE CPU thread, so "45 minutes of training" means 45 CPU-minutes for every
row alike. A stage starts as soon as the stages it needs have finished:
  pretrain (MLM, shared by CFR and CAR) -> train-cfr (fine-grained) -> train-car (hard negatives from CFR)
  pretrain -> train-cfr cfr.similarity=conventional
  train-reprover (needs nothing)
  train-fusion (after the stages its members need; fitted on the val split)
(train-car waits for train-cfr-conventional instead when the config's car.first_stage is
cfr-conventional.)
and then benchmarks/retrieval.py with configs/retrieval/benchmark_neural.yaml scores them all.
Every stage resumes from its checkpoint, and a finished one returns at once, so after an
interruption the same command carries on where it stopped. Each split strategy gets its own
models, trained on its own train split (novel_premises/test theorems are in random/train, so
random-trained models must never be scored on novel_premises/test).
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from prover.benchmarking.harness import parser
from prover.utils.logs import setup_logging

log = logging.getLogger("pipeline")

# name -> (arguments of `prover retriever`, stages it needs). Listed in start priority: the
# pretrain -> cfr -> car chain is the longest, so it goes first.
STAGES: dict[str, tuple[list[str], list[str]]] = {
    "pretrain": (["pretrain"], []),
    "train-cfr": (["train-cfr", "cfr.similarity=fine"], ["pretrain"]),  # cpu.yaml's own is conventional
    "train-car": (["train-car"], ["train-cfr"]),
    "train-reprover": (["train-reprover"], []),
    # Validated at its end only: each check re-encodes the corpus (~15 CPU-min at the small size).
    "train-cfr-conventional": (["train-cfr", "cfr.similarity=conventional", "cfr.eval_every=0"], ["pretrain"]),
}


# The stage that trains what a fusion member loads (members not listed train nothing).
_MEMBER_STAGE = {"cfr": "train-cfr", "hybrid": "train-cfr", "cfr-conventional": "train-cfr-conventional",
                 "reprover": "train-reprover"}


def stages_for(config: str) -> dict[str, tuple[list[str], list[str]]]:
    """STAGES, with train-car after the CFR its config's `car.first_stage` names, and
    train-fusion (seconds to minutes, on the val split) after the stages of its members."""
    from prover.config import load_config, load_yaml
    from retriever.settings import RetrieverTrainConfig
    tc = load_config(RetrieverTrainConfig, config, [])
    first = tc.car.first_stage
    if first not in ("cfr", "cfr-conventional"):
        raise SystemExit(f"{config}: car.first_stage {first!r} has no training stage here (cfr or cfr-conventional)")
    car_first = "train-cfr" if first == "cfr" else "train-cfr-conventional"
    # The chain that ends in CAR is the longest, so its CFR starts before the other one: with
    # two jobs, pretrain -> CAR's CFR -> CAR runs on one core and the rest on the other.
    order = ["pretrain", car_first, "train-car"] + [s for s in STAGES if s not in ("pretrain", car_first, "train-car")]
    stages = {name: STAGES[name] for name in order}
    stages["train-car"] = (["train-car"], [car_first])
    if "car" not in load_yaml(config):
        # No CAR recipe in the file (cpu.yaml: CAR is not part of the shipped first stage;
        # cpu-car.yaml adds it): train none, rather than one with the schema's defaults.
        del stages["train-car"]
    needs = []
    for m in tc.fusion.members:
        stage = "train-car" if m.endswith(("+car", "+car-only")) else _MEMBER_STAGE.get(m)
        if stage and stage not in stages:
            raise SystemExit(f"{config}: fusion member {m} needs {stage}, but the file has no `car:` recipe")
        if stage and stage not in needs:
            needs.append(stage)
    stages["train-fusion"] = (["train-fusion"], needs)
    return stages


def run_stages(config: str, run_dir: str, logs: Path, strategy: str, jobs: int) -> None:
    """Run the config's stages as subprocesses, `jobs` at a time, each once its prerequisites succeeded."""
    env = os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    stages = stages_for(config)
    pending, running, done, failed = list(stages), {}, set(), []

    def stop(signum: int, frame: object) -> None:
        # A time limit (`timeout`) stops the stages too: they checkpoint as they go, so the same
        # command resumes them, and none keeps the machine busy after the pipeline is gone.
        for p, _ in running.values():
            p.terminate()
        for p, _ in running.values():
            p.wait()
        raise SystemExit(f"stopped by signal {signum}; run the same command to resume")

    signal.signal(signal.SIGTERM, stop)
    while pending or running:
        for name in list(pending):
            args, needs = stages[name]
            if any(n in failed for n in needs):
                pending.remove(name)
                failed.append(name)
                log.error("%s skipped: it needs %s", name, ", ".join(needs))
            elif len(running) < jobs and all(n in done for n in needs):
                cmd = ["prover", "retriever", args[0], "--config", config, f"run_dir={run_dir}",
                       f"train_split={strategy}/train", f"val_split={strategy}/val", *args[1:]]
                log.info("start %s: %s (log: %s)", name, " ".join(cmd), logs / f"{name}.log")
                out = open(logs / f"{name}.log", "a")
                running[name] = (subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env), out)
                pending.remove(name)
        time.sleep(2)
        for name, (p, out) in list(running.items()):
            if p.poll() is None:
                continue
            out.close()
            del running[name]
            log.info("%s finished with exit code %d", name, p.returncode)
            (done.add(name) if p.returncode == 0 else failed.append(name))
    if failed:
        raise SystemExit(f"stage(s) failed: {', '.join(failed)}; see their logs in {logs}")


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/retriever/small.yaml")
    p.add_argument("--strategy", default="random", help="split strategy: random or novel_premises")
    p.add_argument("--run-dir", default=None,
                   help="default: $PROVER_RUNS/retriever-<config name> (random), "
                        "or retriever-<config name>-<strategy>")
    p.add_argument("--benchmark-config", default=None,
                   help="default: configs/retrieval/benchmark_neural.yaml for small.yaml, "
                        "configs/retrieval/benchmark_<config name>.yaml for the others")
    p.add_argument("--skip-training", action="store_true")
    p.add_argument("--no-benchmark", action="store_true", help="train only")
    p.add_argument("--jobs", type=int, default=2, help="stages run at once (one CPU thread each)")
    args = p.parse_args(argv)
    # cpu-car.yaml is cpu.yaml plus CAR's recipe: the same run folder and benchmark config.
    size = Path(args.config).stem.removesuffix("-car")
    if args.run_dir is None:
        suffix = "" if args.strategy == "random" else f"-{args.strategy}"
        args.run_dir = os.path.join(os.environ.get("PROVER_RUNS", "runs"), f"retriever-{size}{suffix}")
    if args.benchmark_config is None:
        args.benchmark_config = ("configs/retrieval/benchmark_neural.yaml" if size == "small"
                                 else f"configs/retrieval/benchmark_{size}.yaml")
    if not args.no_benchmark and not Path(args.benchmark_config).exists():
        p.error(f"no benchmark config {args.benchmark_config}: pass --benchmark-config")
    setup_logging()
    logs = Path(args.run_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    if not args.skip_training:
        run_stages(args.config, args.run_dir, logs, args.strategy, args.jobs)
    if args.no_benchmark:
        return 0
    cmd = [sys.executable, "benchmarks/retrieval.py", "--config", args.benchmark_config,
           f"data.split={args.strategy}/test", f"retriever.run_dir={args.run_dir}",
           f"retriever.models={args.config}"]
    log.info("benchmark: %s", " ".join(cmd))
    subprocess.run(cmd, check=True)
    log.info("pipeline done in %.1f h", (time.time() - t0) / 3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
