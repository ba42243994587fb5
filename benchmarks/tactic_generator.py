"""Tactic generator benchmark: one trained generator under premise conditions, side by side.

    python benchmarks/tactic_generator.py --config configs/generator/benchmark_mini.yaml
    python benchmarks/tactic_generator.py --config configs/generator/benchmark_real.yaml   # real tactics

(Named tactic_generator.py, not generator.py: run as a script, its folder comes first on
the import path, and a generator.py there would shadow the `generator` package.)

For every traced tactic of the split (or a fixed random subset): top-1 and top-n exact match
of beam search against the recorded tactic, and the mean log-likelihood of the recorded
tactic, with no premises, the gold premises, and each retriever's top k; and the `frequency`
baseline (no model: the n most frequent tactics of the training split's examples, the same for
every state). Each row has 95% paired bootstrap intervals (examples resampled, the retrieval
benchmark's bootstrap), and so do the differences at EM@n of each premise row to `none` and of
each model row to `frequency`. Then generation throughput (states/s) at batch 1 and 16 on this
machine. Writes benchmarks/results/generator-<dataset>-<split>.{json,md} and each row's
per-example outcomes under benchmarks/results/outcomes/. Conditions already in the JSON are
kept (resume), --force redoes them. Each row records its own commit, command and config; a tree
with uncommitted changes to code or configs is refused unless --allow-dirty, which marks the
rows; a model its time budget stopped before its planned step, unless --allow-partial, which marks
the model's rows partial. A trained retriever whose models are missing is not run: its row is absent, with the
one-line reason, in the files.
"""
from __future__ import annotations

import gzip
import json
import logging
import sys
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from generator.evaluate import (condition_premises, eval_examples, evaluate_condition, evaluate_frequency,
                                evaluate_neighbors, frequent_tactics, throughput)
from generator.model import TacticGenerator, frequent_targets
from generator.settings import GenerateConfig, GeneratorBenchmarkConfig
from prover.benchmarking.generator_tables import (BASELINES, FREQUENCY, NEIGHBORS, add_intervals, markdown,
                                                  outcomes_path, write_outcomes)
from prover.benchmarking.harness import (add_run_flags, load_config, machine, parser, peak_rss_gib,
                                         require_clean_tree, row_provenance, to_plain, write_results)
from prover.data.dataset import Dataset
from prover.data.jsonio import load_json
from prover.data.tactic_steps import tactic_level
from prover.utils.logs import setup_logging
from prover.utils.runinfo import require_full_training
from retriever.registry import build_retriever, missing_training

log = logging.getLogger("benchmark.generator")

NO_RETRIEVER = ("none", "gold", *BASELINES)


def read_outcomes(path: Path) -> tuple[list[str], dict[str, np.ndarray]]:
    rows = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
    names = [k for k in (rows[0] if rows else {}) if k != "key"]
    return [r["key"] for r in rows], {m: np.asarray([r[m] for r in rows], dtype=np.float64) for m in names}


def statement_level(theorems) -> bool:
    """Whether a split is statement-level: every theorem one pseudo-step ending in no goals."""
    steps = [t for thm in theorems for t in thm.traced_tactics]
    return bool(steps) and all(len(thm.traced_tactics) <= 1 for thm in theorems) and all(
        " ".join(t.state_after.split()) == "no goals" for t in steps)


def grown_pool(neighbors, n: int) -> list[str]:
    """The `n` most frequent tactics of the generator's training states (the tactic neighbours
    index them all; the evaluated theorems' left out): the shipped model's saved pool is its first 64."""
    hidden = neighbors.hidden
    return frequent_targets([t for i, t in enumerate(neighbors.tactics) if hidden is None or not hidden[i]], n)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default=None)
    p.add_argument("--force", action="store_true", help="recompute conditions already in the results file")
    add_run_flags(p, "score a model its time budget stopped before the planned step; its rows are marked partial")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)  # before any work: a refused run costs nothing
    setup_logging()
    cfg = load_config(GeneratorBenchmarkConfig, args.config, args.overrides)
    command = " ".join(["python benchmarks/tactic_generator.py", *(["--config", args.config] if args.config else []),
                        *args.overrides])
    plain_cfg = to_plain(cfg)
    summary_path = Path(cfg.model).parent / "summary.json"
    # Before any work: the recipe's model is the one at its planned step.
    partial = require_full_training({"generator": load_json(summary_path) if summary_path.exists() else None},
                                    args.allow_partial).get("generator")
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    stem = f"generator-{ds.name}-{cfg.data.split.replace('/', '-')}" + (f"-{cfg.results_tag}" if cfg.results_tag else "")
    out = Path(cfg.results_dir)
    json_path = out / f"{stem}.json"
    previous = load_json(json_path) if json_path.exists() and not args.force else {}
    done = {r["condition"]: r for r in previous.get("rows", [])}

    corpus = ds.corpus()
    examples = eval_examples(ds.theorems(cfg.data.split), corpus, cfg.max_examples, cfg.seed)
    keys = [e.key for e in examples]
    gen = TacticGenerator.load(cfg.model, generate=GenerateConfig(premise_bonus=cfg.premise_bonus))
    if cfg.instantiate:  # tried, not shipped
        from generator.tried.instantiate import plug_in
        plug_in(gen, cfg.instantiate)
    if not cfg.pool:
        gen.pool = []
    nearest = gen.neighbors  # the `neighbors` baseline uses them whether or not the model rows do
    held_out = None
    if nearest is not None:
        # The evaluated theorems' own training states never vote (a novel_premises/test theorem is
        # in random/train). An index made before states kept their theorem cannot leave them out.
        try:
            held_out = nearest.exclude({f"{e.file_path}::{e.theorem}" for e in examples})
        except ValueError as e:
            log.warning("tactic neighbours: %s", e)
    if cfg.pool and cfg.pool_size is not None:
        if nearest is None:
            raise SystemExit(f"pool_size={cfg.pool_size}: {cfg.model} has no tactic neighbours, whose "
                             "training tactics the pool is counted from")
        gen.pool = grown_pool(nearest, cfg.pool_size)
    gen.mix_neighbors = cfg.neighbors
    if cfg.neighbors_weight is not None and gen.neighbors is not None:
        gen.neighbors.cfg = replace(gen.neighbors.cfg, weight=cfg.neighbors_weight)
    n = cfg.num_tactics
    result = {"benchmark": "generator", "command": command, "dataset": ds.name, "split": cfg.data.split,
              "config": plain_cfg, "git_commit": commit, "machine": machine(),
              "model": cfg.model, "model_params": sum(p.numel() for p in gen.model.parameters()),
              "pool_size": len(gen.pool),
              "neighbors": asdict(gen.neighbors.cfg) if gen.neighbors is not None and cfg.neighbors else None,
              "neighbor_tactics_in_input": gen.input_cfg.neighbor_tactics,
              "instantiate": cfg.instantiate, "premise_bonus": cfg.premise_bonus, "num_beams": cfg.num_beams,
              "neighbors_states_held_out": held_out,  # None: the index could not leave any out
              "model_training": json.loads(summary_path.read_text()) if summary_path.exists() else None,
              "max_bytes": gen.input_cfg.max_bytes, "n_examples": len(examples),
              "n_with_gold": sum(bool(e.gold) for e in examples), "rows": [], "absent": {},
              "frequency": previous.get("frequency"),
              "throughput": previous.get("throughput"),
              "throughput_provenance": previous.get("throughput_provenance")}
    trained_cfg = (result["model_training"] or {}).pop("config", None) or {}
    per_example: dict[str, dict[str, np.ndarray]] = {}

    def save() -> None:
        add_intervals(result, per_example, n, keys)
        result["peak_rss_gib"] = round(peak_rss_gib(), 2)
        write_results(out / stem, result, markdown(result))

    for cond in cfg.conditions:
        path = outcomes_path(out, stem, cond)
        if cond in done:
            log.info("%s: already in %s (--force to redo)", cond, json_path)
            result["rows"].append(done[cond])
            if path.exists():
                got, values = read_outcomes(path)
                if got == keys:  # paired only over the very same examples
                    per_example[cond] = values
            continue
        if cond not in NO_RETRIEVER:
            reason = missing_training(cond, cfg)
            if reason:  # not faked: the row is left out and the files say why
                log.warning("%s: left out: %s", cond, reason)
                result["absent"][cond] = reason
                continue
        if cond == NEIGHBORS:
            if nearest is None:
                result["absent"][cond] = f"the model in {cfg.model} has no tactic neighbours (prover generator neighbors)"
                log.warning("%s: left out: %s", cond, result["absent"][cond])
                continue
            result["neighbors_baseline"] = {**asdict(nearest.cfg), "n_states": len(nearest.tactics),
                                            "train_split": cfg.train_split}
            row = {"condition": cond, **evaluate_neighbors(examples, nearest, n)}
        elif cond == FREQUENCY:
            train = ds.theorems(cfg.train_split)
            if trained_cfg.get("data", {}).get("granularity") == "tactic":
                # The tactics the model was trained on: the split's proofs split into steps.
                train, _ = tactic_level(train, trained_cfg["input"]["max_target_bytes"])
            top = frequent_tactics(train, corpus, n)
            result["frequency"] = {"train_split": cfg.train_split, "tactics": [[t, c] for t, c in top],
                                   "n_examples": sum(len(t.traced_tactics) for t in train
                                                     if t.file_path in corpus.file_index),
                                   "statement_level": statement_level(train),
                                   "granularity": trained_cfg.get("data", {}).get("granularity", "statement")}
            row = {"condition": cond, **evaluate_frequency(examples, [t for t, _ in top], n)}
        else:
            retriever = None
            if cond not in NO_RETRIEVER:
                retriever = build_retriever(cond, corpus, cfg)  # reads cfg.retriever (bm25, models, run_dir)
            premises = condition_premises(cond, examples, corpus, retriever, cfg.retriever.k)
            row = {"condition": cond, **evaluate_condition(gen, examples, premises, n, cfg.batch_size, cfg.num_beams)}
        values = row.pop("per_example")
        write_outcomes(path, keys, values)
        per_example[cond] = {m: np.asarray(v, dtype=np.float64) for m, v in values.items()}
        row["provenance"] = row_provenance(commit, command, plain_cfg)
        if partial and cond not in BASELINES:
            row["partial"] = partial
        log.info("%s: EM@1 %.3f, EM@%d %.3f", cond, row["exact_match@1"], n, row[f"exact_match@{n}"])
        result["rows"].append(row)
        save()
    if not result["throughput"] or args.force:
        states = [gen.input_text(e.state, [corpus.premises[i] for i in e.gold])[0]
                  for e in examples[: cfg.throughput_states]]
        raw = [e.state for e in examples[: cfg.throughput_states]]
        result["throughput"] = {str(b): round(throughput(gen, states, n, b, raw, cfg.num_beams), 3) for b in (1, 16)}
        result["throughput_provenance"] = row_provenance(commit, command, plain_cfg)
        result["throughput_beams"] = cfg.num_beams or n
    save()
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
