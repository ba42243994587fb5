"""The tiny retriever pipeline (tokenizer → MLM → CFR → CAR on mathlib-src-mini), trained once per
seed, to show the test suite's tiny acceptance checks do not hinge on one lucky seed.

    python benchmarks/tried/tiny_seeds.py --seeds 42,1,2,3 --repeat 42

Per seed: CPU seconds per stage (one thread, as the test fixture trains), R@10 of the untrained
and trained CFR, and R@5 of CFR alone and of `cfr+car` as tiny.yaml sets it, on the whole mini
random/val split. `--repeat` trains those seeds a second time in a fresh folder and records
whether every saved file (tokenizer and the three models) came out identical to the byte.
Runs live under `--runs`; a finished seed is read back from the results JSON, so an interrupted
run resumes. Writes benchmarks/results/tiny-seeds-mathlib-src-mini-random-val.{json,md}.
"""
from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from pathlib import Path

import torch

from prover.benchmarking.harness import git_commit, load_config, machine, parser, write_results
from prover.data.dataset import Dataset
from prover.data.pairs import premise_queries
from prover.utils.logs import setup_logging
from retriever.evaluation.evaluate import evaluate
from retriever.registry import build_retriever
from retriever.settings import RetrieverTrainConfig
from retriever.training.pretrain import pretrain
from retriever.training.train_car import train_car
from retriever.training.train_cfr import train_cfr, untrained_retriever

log = logging.getLogger("tiny_seeds")
REPO = Path(__file__).resolve().parents[2]
SAVED = ["tokenizer/tokenizer.json", "pretrain/model/model.safetensors", "cfr/model/model.safetensors",
         "car/model/model.safetensors"]


def digests(run_dir: Path) -> dict[str, str]:
    return {f: hashlib.sha256((run_dir / f).read_bytes()).hexdigest()[:16] for f in SAVED}


def train_and_score(cfg: RetrieverTrainConfig, ds: Dataset) -> dict:
    corpus = ds.corpus()
    seconds = {}
    for name, run in (("pretrain", lambda: pretrain(cfg)), ("cfr", lambda: train_cfr(cfg)),
                      ("car", lambda: train_car(cfg, build_retriever("cfr", corpus, cfg)))):
        c0 = time.process_time()
        run()
        seconds[name] = round(time.process_time() - c0, 1)
    queries, _ = premise_queries(ds.theorems(cfg.val_split), corpus)
    cfr = build_retriever("cfr", corpus, cfg)
    cfr_m = evaluate(cfr, queries, ks=(5, 10)).metrics
    car_m = evaluate(build_retriever("cfr+car", corpus, cfg), queries, ks=(5,)).metrics
    untrained = evaluate(untrained_retriever(cfg, corpus), queries, ks=(10,)).metrics
    return {"cpu_seconds": seconds, "cpu_seconds_total": round(sum(seconds.values()), 1),
            "queries": len(queries), "untrained_cfr_R@10": untrained["R@10"], "cfr_R@10": cfr_m["R@10"],
            "cfr_R@5": cfr_m["R@5"], "cfr+car_R@5": car_m["R@5"],
            "car_gain_R@5": round(car_m["R@5"] - cfr_m["R@5"], 6), "digests": digests(Path(cfg.run_dir))}


def markdown(result: dict) -> str:
    lines = ["## Tiny retriever pipeline across seeds: mathlib-src-mini random/val", "",
             "| seed | CPU-s (pretrain / CFR / CAR) | total | untrained R@10 | CFR R@10 | CFR R@5 | CFR+CAR R@5 | gain |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        s = r["cpu_seconds"]
        lines.append(f"| {r['seed']} | {s['pretrain']} / {s['cfr']} / {s['car']} | {r['cpu_seconds_total']} | "
                     f"{100 * r['untrained_cfr_R@10']:.1f} | {100 * r['cfr_R@10']:.1f} | {100 * r['cfr_R@5']:.1f} | "
                     f"{100 * r['cfr+car_R@5']:.1f} | {100 * r['car_gain_R@5']:+.1f} |")
    lines.append("")
    for seed, same in result["repeats"].items():
        lines.append(f"- Seed {seed} trained twice: {'every saved file identical' if same else 'files differ'}.")
    return "\n".join(lines) + (f"\n\nOne thread. {result['rows'][0]['queries'] if result['rows'] else 0} queries. "
                               f"Machine: {result['machine']['cpu']}. Commit {result['git_commit']}.\n"
                               f"Command: `{result['command']}`\n")


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default=str(REPO / "configs/retriever/tiny.yaml"))
    p.add_argument("--seeds", default="42,1,2,3")
    p.add_argument("--repeat", default="42", help="seeds to train twice ('' for none)")
    p.add_argument("--runs", default="runs/tiny-seeds", help="folder for the per-seed run folders")
    p.add_argument("--results-dir", default=str(REPO / "benchmarks/results"))
    p.add_argument("overrides", nargs="*", help="key=value overrides of the tiny config")
    args = p.parse_args(argv)
    setup_logging()
    torch.set_num_threads(1)
    out = Path(args.results_dir) / "tiny-seeds-mathlib-src-mini-random-val"
    previous = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else {}
    commit = git_commit()
    if previous and previous.get("git_commit") != commit:
        # Resuming is for a run cut short at this commit; rows from other code would be
        # stamped with this commit when the file is rewritten.
        log.info("%s was written at %s, not %s: every seed is trained again",
                 out.with_suffix(".json"), previous.get("git_commit"), commit)
        previous = {}
    rows = {r["seed"]: r for r in previous.get("rows", [])}
    repeats = {int(k): v for k, v in previous.get("repeats", {}).items()}
    order = [int(s) for s in args.seeds.split(",")]
    jobs = [(s, "") for s in order] + [(int(s), "-again") for s in args.repeat.split(",") if s]

    def save() -> dict:
        result = {"benchmark": "tiny-seeds", "config_path": args.config, "overrides": args.overrides,
                  "command": " ".join(["python benchmarks/tried/tiny_seeds.py", *(argv if argv is not None else sys.argv[1:])]),
                  "git_commit": commit, "machine": machine(),
                  "rows": [rows[s] for s in order if s in rows] + [r for s, r in rows.items() if s not in order],
                  "repeats": repeats}
        write_results(out, result, markdown(result))
        return result

    ds = None
    for seed, suffix in jobs:
        if (seed in repeats) if suffix else (seed in rows):
            continue
        run_dir = Path(args.runs) / f"seed-{seed}{suffix}"
        cfg = load_config(RetrieverTrainConfig, args.config, [f"run_dir={run_dir}", f"seed={seed}", *args.overrides])
        ds = ds or Dataset(cfg.data.root)
        log.info("seed %d%s: training in %s", seed, suffix, run_dir)
        row = {"seed": seed, **train_and_score(cfg, ds)}
        if suffix:
            if seed not in rows:
                raise SystemExit(f"--repeat {seed}: train it first with --seeds")
            repeats[seed] = row["digests"] == rows[seed]["digests"]
        else:
            rows[seed] = row
        save()
    print(markdown(save()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
