"""Tactic generator benchmark: one trained generator under premise conditions, side by side.

    python benchmarks/generator.py --config configs/generator/benchmark_mini.yaml

For every traced tactic of the split (or a fixed random subset): top-1 and top-n exact match
of beam search against the recorded tactic, and the mean log-likelihood of the recorded
tactic, with no premises, the gold premises, and each retriever's top k. Then generation
throughput (states/s) at batch 1 and 16 on this machine. Writes
benchmarks/results/generator-<dataset>-<split>.{json,md}; conditions already in the JSON
are kept (resume), --force redoes them.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path


# Run as a script, this file's folder comes first on sys.path and its name would shadow the
# `generator` package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from generator.evaluate import condition_premises, eval_examples, evaluate_condition, throughput
from generator.inputs import format_input
from generator.model import TacticGenerator
from generator.settings import GeneratorBenchmarkConfig
from prover.config import load_config, to_plain
from prover.data.dataset import Dataset
from prover.data.jsonio import load_json, write_json
from prover.utils.logs import setup_logging
from prover.utils.runinfo import machine, peak_rss_gib, require_clean_tree
from retriever.registry import build_retriever

log = logging.getLogger("benchmark.generator")


def markdown(result: dict) -> str:
    n = result["config"]["num_samples"]
    lines = [f"# Tactic generator: {result['dataset']} {result['split']}", "",
             f"Model `{result['model']}` ({result['model_params'] / 1e6:.2f}M parameters), "
             f"{result['n_examples']} tactics ({result['n_with_gold']} with gold premises), "
             f"beam {n}, input budget {result['max_bytes']} bytes. Command: `{result['command']}`", "",
             f"| premises | EM@1 | EM@{n} | gold log-lik | per byte | premises shown | seconds |",
             "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['condition']} | {100 * r['exact_match@1']:.1f}% | {100 * r[f'exact_match@{n}']:.1f}% | "
                     f"{r['gold_loglik']:.2f} | {r['gold_loglik_per_byte']:.3f} | {r['premises_shown']:.1f} | "
                     f"{r['seconds']} |")
    if result.get("throughput"):
        lines += ["", "| batch | states/s (beam %d) |" % n, "|---|---|"]
        lines += [f"| {b} | {v:.2f} |" for b, v in result["throughput"].items()]
    lines += ["", f"Git commit {result['git_commit']}; machine: {result['machine'].get('cpu', '')}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=None)
    p.add_argument("--force", action="store_true", help="recompute conditions already in the results file")
    p.add_argument("--allow-dirty", action="store_true", help="run on uncommitted code or configs")
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)  # before any work: a refused run costs nothing
    setup_logging()
    cfg = load_config(GeneratorBenchmarkConfig, args.config, args.overrides)
    command = " ".join(["python benchmarks/generator.py", *(["--config", args.config] if args.config else []),
                        *args.overrides])
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
    stem = f"generator-{ds.name}-{cfg.data.split.replace('/', '-')}"
    out = Path(cfg.results_dir)
    json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
    previous = load_json(json_path) if json_path.exists() and not args.force else {}
    done = {r["condition"]: r for r in previous.get("rows", [])}

    corpus = ds.corpus()
    examples = eval_examples(ds.theorems(cfg.data.split), corpus, cfg.max_examples, cfg.seed)
    gen = TacticGenerator.load(cfg.model)
    summary_path = Path(cfg.model).parent / "summary.json"
    result = {"benchmark": "generator", "command": command, "dataset": ds.name, "split": cfg.data.split,
              "config": to_plain(cfg), "git_commit": commit, "machine": machine(),
              "model": cfg.model, "model_params": sum(p.numel() for p in gen.model.parameters()),
              "model_training": json.loads(summary_path.read_text()) if summary_path.exists() else None,
              "max_bytes": gen.input_cfg.max_bytes, "n_examples": len(examples),
              "n_with_gold": sum(bool(e.gold) for e in examples), "rows": [],
              "throughput": previous.get("throughput")}
    if result["model_training"]:
        result["model_training"].pop("config", None)
    for cond in cfg.conditions:
        if cond in done:
            log.info("%s: already in %s (--force to redo)", cond, json_path)
            result["rows"].append(done[cond])
            continue
        retriever = None
        if cond not in ("none", "gold"):
            retriever = build_retriever(cond, corpus, cfg)  # reads cfg.retriever (bm25, models, run_dir)
        premises = condition_premises(cond, examples, corpus, retriever, cfg.k)
        row = {"condition": cond, **evaluate_condition(gen, examples, premises, cfg.num_samples, cfg.batch_size)}
        log.info("%s: EM@1 %.3f, gold log-lik %.2f", cond, row["exact_match@1"], row["gold_loglik"])
        result["rows"].append(row)
        write_json(json_path, result)
        md_path.write_text(markdown(result))
    if not result["throughput"] or args.force:
        states = [format_input(e.state, [corpus.premises[i] for i in e.gold], gen.input_cfg.max_bytes)[0]
                  for e in examples[: cfg.throughput_states]]
        result["throughput"] = {str(b): round(throughput(gen, states, cfg.num_samples, b), 3) for b in (1, 16)}
    result["peak_rss_gib"] = round(peak_rss_gib(), 2)
    write_json(json_path, result)
    md_path.write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
