"""`prover benchmark`: best-first proof search on Ray over a theorem set, one run per retriever."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


RETRIEVERS = ("none", "bm25", "bm25-plain", "reprover", "cfr", "cfr-conventional", "cfr+car", "hybrid", "fusion")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help="YAML config (e.g. configs/search/default.yaml)")
    p.add_argument("--theorems", default=None,
                   help="minif2f, a LeanDojo split file (.json[.gz]), a dataset folder (with --split; demo: the "
                        "bundled demo library), "
                        "or a theorem list (.jsonl)")
    p.add_argument("--split", default=None, help="minif2f: valid|test; a dataset folder: e.g. random/test")
    p.add_argument("--retriever", default=None,
                   help=f"one or more of {', '.join(RETRIEVERS)}, comma-separated (one run each)")
    p.add_argument("--env", choices=["auto", "repl", "leandojo", "replay"], default=None,
                   help="auto (default: the Lean version decides), repl (Lean through the Lean REPL; "
                        "pass@1), leandojo (lean-dojo's Dojo, Lean before v4.12; pass@1) or replay "
                        "(a simulator over traced proofs; never pass@1)")
    p.add_argument("--generator", default=None, help="trained generator folder (…/generator/model)")
    p.add_argument("--corpus", default=None, help="dataset folder whose corpus the retriever searches "
                   "(default: the corpus of the Lean project the run is on, built from its source once; "
                   "prover data corpus)")
    p.add_argument("--retriever-models", default=None, help="retriever training config of trained models")
    p.add_argument("--workers", type=int, default=None, help="ProverWorker actors")
    p.add_argument("--address", default=None,
                   help="Ray cluster address (default: $RAY_ADDRESS, else a new local cluster)")
    p.add_argument("--out", default=None, help="results folder (one subfolder per env and retriever)")
    p.add_argument("--limit", type=int, default=None, help="only the first N theorems")
    p.add_argument("--allow-partial", action="store_true",
                   help="search with a generator its time budget stopped before its planned step "
                        "(refused otherwise); the summary is then marked partial")
    p.add_argument("overrides", nargs="*", help="key=value config overrides")


def config_from_args(args: argparse.Namespace):
    from prover.config import load_config
    from prover.search.settings import SearchBenchmarkConfig
    flags = {
        "theorems.source": args.theorems, "theorems.split": args.split, "env.name": args.env,
        "generator.model": args.generator, "retriever.corpus": args.corpus,
        "retriever.models": args.retriever_models, "ray.num_workers": args.workers,
        "ray.address": args.address, "out_dir": args.out, "theorems.limit": args.limit,
    }
    overrides = [f"{k}={v}" for k, v in flags.items() if v is not None] + list(args.overrides)
    cfg = load_config(SearchBenchmarkConfig, args.config, overrides)
    retrievers = [r.strip() for r in (args.retriever or cfg.retriever.name).split(",") if r.strip()]
    unknown = [r for r in retrievers if r not in RETRIEVERS]
    if unknown:
        raise ValueError(f"unknown retriever {unknown[0]!r}: expected {', '.join(RETRIEVERS)}")
    cfg.retriever.name = retrievers[0]
    return cfg, retrievers


def generator_partial(model: str | None, allow_partial: bool) -> dict[str, str]:
    """{"generator": note} when the generator's training stopped on its time budget before its
    planned step ({} otherwise); refused in one line unless `allow_partial`, before any work."""
    import json
    from prover.utils.runinfo import require_full_training
    summary = Path(model or "").parent / "summary.json"
    if not model or not summary.is_file():
        return {}
    return require_full_training({"generator": json.loads(summary.read_text())}, allow_partial)


def run_benchmark_command(args: argparse.Namespace) -> int:
    cfg, retrievers = config_from_args(args)
    from prover.search.placement import precheck
    precheck(cfg.ray, retrievers)  # a request this machine cannot place: one line, before anything loads
    from prover.search.benchmark import run_benchmark
    from prover.env.lean_version import EnvChoiceError
    from prover.env.repl_session import InsufficientMemory, ReplUnavailable
    from prover.search.components import EnvUnavailableError, require_env, resolve_env
    from prover.utils.ray_cluster import RayWaitTimeout
    from prover.search.results import markdown
    command = "prover " + " ".join(getattr(args, "argv", ["benchmark"]))
    partial = generator_partial(cfg.generator.model, getattr(args, "allow_partial", False))
    try:
        resolve_env(cfg)  # auto, and lean-dojo refused on Lean v4.12 or later
        require_env(cfg.env.name)  # before anything loads: say at once that Lean is missing
        summary = run_benchmark(cfg, retrievers, command=command, partial=partial)
    except (EnvUnavailableError, EnvChoiceError, ReplUnavailable, InsufficientMemory, RayWaitTimeout) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(markdown(summary))
    print(f"results: {Path(cfg.out_dir).resolve()} (summary.json, summary.md, <run>/results.jsonl)")
    return 0
