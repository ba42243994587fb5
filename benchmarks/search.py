"""Proof-search throughput on Ray: one shared retriever actor vs a retriever copy per worker.

    python benchmarks/search.py                       # 1, 2 and 4 workers, CFR, 48 theorems
    python benchmarks/search.py --workers 1 2 --limit 24 --retriever bm25

ReplayEnv (a simulator: no Lean here) on statement-level theorems of mathlib-src-mini, the
tiny generator and the tiny CFR (trained here on first use, a few minutes, cached under
--models). For each worker count, the same theorems are searched twice: with all workers
sharing one RetrieverActor (dynamic batching), and with each worker holding its own retriever
copy. Reported side by side: expansions per second (from the first dispatch to the last
result, actor start-up excluded), the resident memory of the retriever actor and of the
workers, and the retriever actor's achieved batch sizes.

Writes benchmarks/results/search-throughput-<retriever>.{json,md}.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

from prover.benchmarking.harness import git_commit, load_config, machine, parser, write_results
from prover.search.actors import RaySession
from prover.search.benchmark import run_one
from prover.search.settings import SearchBenchmarkConfig
from prover.search.theorems import default_data_root
from prover.utils.logs import setup_logging

log = logging.getLogger("benchmarks.search")
REPO = Path(__file__).resolve().parents[1]


def ensure_tiny_models(models: Path, mini: Path) -> dict:
    """The tiny generator and CFR (with its premise index), trained once and reused."""
    import torch
    torch.set_num_threads(1)
    gen_model = models / "gen" / "generator" / "model"
    if not (gen_model / "config.json").exists():
        from generator.settings import GeneratorTrainConfig
        from generator.train import train_generator
        log.info("training the tiny generator (once) into %s", gen_model)
        train_generator(load_config(GeneratorTrainConfig, str(REPO / "configs/generator/tiny.yaml"), [
            f"run_dir={models / 'gen'}", f"data.root={mini}", "train.max_steps=30",
            "train.eval_beams=0", "train.eval_examples=16"]))
    ret_dir = models / "ret"
    if not (ret_dir / "cfr" / "index").exists():
        from prover.data.dataset import Dataset
        from retriever.training.pretrain import pretrain
        from retriever.settings import RetrieverTrainConfig
        from retriever.training.train_cfr import train_cfr
        from retriever.registry import build_retriever
        log.info("training the tiny CFR (once) into %s", ret_dir)
        cfg = load_config(RetrieverTrainConfig, str(REPO / "configs/retriever/tiny.yaml"), [
            f"run_dir={ret_dir}", f"data.root={mini}", "device=cpu", "pretrain.max_steps=20",
            "cfr.max_steps=20", "cfr.eval_every=-1"])
        pretrain(cfg)
        train_cfr(cfg)
        # Saved index: each retriever copy loads it instead of encoding the corpus again.
        build_retriever("cfr", Dataset(mini).corpus(), cfg).save_index(ret_dir / "cfr" / "index")
    return {"generator": str(gen_model), "retriever_run_dir": str(ret_dir)}


def measure(row: dict, workers: int, shared: bool) -> dict:
    s = row["last_session"]
    retr = s.get("retriever") or {}
    worker_rss = [w["rss_mib"] for w in s.get("workers", [])]
    gens = s.get("generators", [])
    out = {
        "workers": workers, "retriever_placement": "shared actor" if shared else "copy per worker",
        "theorems": row["theorems"], "expansions": s["expansions"], "dispatch_s": s["dispatch_s"],
        "startup_s": round(s["wall_s"] - s["dispatch_s"], 2),
        "expansions_per_s": round(s["expansions"] / s["dispatch_s"], 3) if s["dispatch_s"] else None,
        "retriever_actor_rss_mib": retr.get("rss_mib"),
        "workers_rss_mib": round(sum(worker_rss), 1), "worker_rss_mib": worker_rss,
        "retrieval_rss_total_mib": round(sum(worker_rss) + (retr.get("rss_mib") or 0.0), 1),
        "generator_rss_mib": gens[0]["rss_mib"] if gens else None,
        "mean_retrieval_s": row["mean_retrieval_s"], "mean_generation_s": row["mean_generation_s"],
    }
    if retr:
        out.update(retriever_batches=retr["batches"], mean_batch_size=retr["mean_batch_size"],
                   batch_sizes=retr["batch_sizes"])
    if gens:
        out.update(generator_mean_batch_size=gens[0]["mean_batch_size"], generator_batch_sizes=gens[0]["batch_sizes"],
                   # Share of the run the generator spent computing: near 100% means it is the bottleneck.
                   generator_busy=round(gens[0]["busy_s"] / s["dispatch_s"], 3) if s["dispatch_s"] else None)
    if retr:
        out["retriever_busy"] = round(retr["busy_s"] / s["dispatch_s"], 3) if s["dispatch_s"] else None
    return out


def markdown(result: dict) -> str:
    c = result["settings"]
    lines = [
        f"# Proof search throughput: shared retriever actor vs a copy per worker ({c['retriever']})", "",
        "env: replay (simulator; not Lean). Tiny generator and tiny CFR trained on mathlib-src-mini; "
        f"{c['theorems']} statement-level theorems of mathlib-src-mini {c['split']}; {c['num_tactics']} "
        f"tactics per expansion, at most {c['max_expansions']} expansions per theorem; one local Ray "
        f"cluster of {c['ray_cpus']} CPUs on {result['machine'].get('cpu_count')} cores shared with other jobs.", "",
        "| workers | retriever | expansions | expansions/s | retriever actor RSS (MiB) | workers RSS, sum (MiB) "
        "| retrieval total RSS (MiB) | retriever batch size: mean (histogram) | generator batch size: mean "
        "| generator busy |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        hist = ", ".join(f"{k}×{v}" for k, v in (r.get("batch_sizes") or {}).items())
        batch = f"{r['mean_batch_size']:.2f} ({hist})" if r.get("batch_sizes") else "– (in-process)"
        lines.append(
            f"| {r['workers']} | {r['retriever_placement']} | {r['expansions']} | {r['expansions_per_s']:.2f} "
            f"| {r['retriever_actor_rss_mib'] or '–'} | {r['workers_rss_mib']:.0f} | {r['retrieval_rss_total_mib']:.0f} "
            f"| {batch} | {r.get('generator_mean_batch_size', 0):.2f} | {100 * (r.get('generator_busy') or 0):.0f}% |")
    lines += ["", "Expansions/s: expansions over the time from the first dispatch to the last result "
              "(actor start-up excluded). RSS: resident memory of each actor process at the end of the "
              "run (workers hold the retriever copy in the second placement). Each expansion is one "
              "retrieval, one generation and up to the tactic count of replay steps. Generator busy: "
              "the share of that time the generator actor spent computing batches.",
              "", f"Command: `{result['command']}`; git {result['git_commit']}; {result['seconds']:.0f} s in all.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--limit", type=int, default=48, help="theorems per configuration")
    p.add_argument("--retriever", default="cfr", help="cfr (default) or bm25")
    p.add_argument("--data", default=str(default_data_root()), help="shared data folder")
    p.add_argument("--models", default="runs/search-bench-models", help="tiny models (trained if missing)")
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("overrides", nargs="*", help="key=value overrides of configs/search/tiny.yaml")
    args = p.parse_args(argv)
    setup_logging()
    t0 = time.perf_counter()
    data = Path(args.data)
    mini = data / "mathlib-src-mini"
    models = ensure_tiny_models(Path(args.models), mini)
    scratch = Path("runs") / "search-bench" / time.strftime("%Y%m%d-%H%M%S")
    base = [f"theorems.source={mini}", "theorems.split=random/test", f"theorems.limit={args.limit}",
            f"retriever.name={args.retriever}", f"retriever.corpus={mini}",
            f"retriever.models={REPO / 'configs/retriever/tiny.yaml'}",
            f"retriever.run_dir={models['retriever_run_dir']}", f"generator.model={models['generator']}",
            "generator.num_tactics=8", "search.max_expansions=4", "env.replay.delay_s=0.005",
            "ray.worker_cpus=0.25", "ray.retriever_cpus=0.5", "ray.generator_cpus=0.5", "ray.local_num_cpus=2",
            "ray.object_store_mb=128", *args.overrides]
    rows = []
    session = None
    cfg = None
    try:
        for shared in (True, False):
            for n in args.workers:
                cfg = load_config(SearchBenchmarkConfig, str(REPO / "configs/search/tiny.yaml"), base + [
                    f"ray.num_workers={n}", f"ray.shared_retriever={str(shared).lower()}",
                    f"out_dir={scratch}", f"run_name={'shared' if shared else 'copies'}-{n}"])
                session = session or RaySession(cfg.ray)
                log.info("%d workers, retriever %s", n, "shared" if shared else "copied per worker")
                rows.append(measure(run_one(cfg, session, command="benchmarks/search.py"), n, shared))
                log.info("-> %s", json.dumps({k: rows[-1][k] for k in ("expansions", "expansions_per_s",
                                                                        "retrieval_rss_total_mib")}))
    finally:
        if session is not None:
            session.close()
    result = {
        "benchmark": "search-throughput", "command": "python benchmarks/search.py " + " ".join(argv or sys.argv[1:]),
        "git_commit": git_commit(), "machine": machine(), "seconds": round(time.perf_counter() - t0, 1),
        "settings": {"retriever": args.retriever, "theorems": args.limit, "split": cfg.theorems.split,
                     "num_tactics": cfg.generator.num_tactics, "max_expansions": cfg.search.max_expansions,
                     "ray_cpus": cfg.ray.local_num_cpus, "workers": args.workers,
                     "batching": {"max_batch_size": cfg.batching.max_batch_size,
                                  "max_wait_ms": cfg.batching.max_wait_ms},
                     "overrides": args.overrides, "models": models},
        "load_average": os.getloadavg(),
        "rows": rows,
    }
    out = Path(args.out)
    stem = f"search-throughput-{args.retriever}"
    write_results(out / stem, result, markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
