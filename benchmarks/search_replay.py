"""Replay proof search on traced theorems (a simulator, never pass@1), one row per retriever.

    python benchmarks/search_replay.py --config configs/search/replay_real.yaml
    python benchmarks/search_replay.py --config configs/search/replay_real.yaml --retrievers bm25

Best-first search on Ray (`prover.search.benchmark.run_one`, as `prover benchmark` runs it) in
ReplayEnv with focus_goals over the theorems of the split that have traced tactics, once per
retriever: the generator sees each retriever's top k premises. Writes
benchmarks/results/search-replay-<dataset>-<split>.{json,md}: per row the replay proof rate with
its 95% bootstrap interval, the paired difference between rows, the outcome of every theorem
(proved / no candidate matched / budget exhausted / error) and the counts of each, and two ceiling
rows, computed here: the recorded tactics themselves proposed through the same search, with no
expansion limit and within the models' budget.

Per-theorem search records go to <out_dir>/replay-<retriever>/results.jsonl; a rerun resumes
there. A trained retriever whose models are missing is not run: the files name it with the
one-line reason. A tree with uncommitted changes to code or configs is refused unless
--allow-dirty, which marks the rows; a generator its time budget stopped before its planned step,
unless --allow-partial, which marks the rows searched with it.
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from omegaconf import OmegaConf

from prover.benchmarking.harness import (add_run_flags, load_config, machine, parser, peak_rss_gib,
                                         require_clean_tree, row_provenance, write_results)
from prover.data.jsonio import load_json
from prover.env.base import ENV_REPLAY
from prover.search.best_first import SearchConfig
from prover.search.replay_benchmark import (CEILING, CEILING_IN_BUDGET, RATE_LABEL, add_intervals, classify,
                                            markdown, outcome_row, replay_ceiling)
from prover.search.results import ResultsFile
from prover.search.settings import SearchBenchmarkConfig, as_object, run_name
from prover.search.theorems import load_source, load_tasks
from prover.utils.logs import setup_logging
from prover.utils.runinfo import require_full_training

log = logging.getLogger("benchmarks.search_replay")
REPO = Path(__file__).resolve().parents[1]
DEFAULT_RETRIEVERS = "none,bm25,cfr-conventional+car"


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/search/replay_real.yaml")
    p.add_argument("--retrievers", default=DEFAULT_RETRIEVERS,
                   help=f"comma-separated registered retrievers, one row each (default {DEFAULT_RETRIEVERS})")
    p.add_argument("--results-dir", default="benchmarks/results")
    p.add_argument("--tag", default="", help="names a second results file: search-replay-<dataset>-<split>-<tag>")
    add_run_flags(p, "search with a generator its time budget stopped before the planned step; its rows are marked partial")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)  # before any work: a refused run costs nothing
    setup_logging()
    t0 = time.perf_counter()
    cfg = load_config(SearchBenchmarkConfig, args.config, args.overrides)
    if cfg.env.name != ENV_REPLAY:
        raise SystemExit(f"error: this benchmark is the replay one (env.name=replay), not {cfg.env.name}")
    command = " ".join(["python benchmarks/search_replay.py", "--config", args.config,
                        *(["--retrievers", args.retrievers] if args.retrievers != DEFAULT_RETRIEVERS else []),
                        *args.overrides])
    plain_cfg = OmegaConf.to_container(cfg, resolve=True)
    summary = Path(cfg.generator.model or "").parent / "summary.json"
    training = load_json(summary) if cfg.generator.model and summary.exists() else None
    # Before any search: the recipe's generator is the one at its planned step.
    partial = require_full_training({"generator": training}, args.allow_partial).get("generator")
    retrievers = [r.strip() for r in args.retrievers.split(",") if r.strip()]

    all_in_split = load_source(cfg.theorems.source, cfg.theorems.split, cfg.theorems.minif2f_path)
    tasks = load_tasks(cfg.theorems)
    keys = [t.key for t in tasks]
    replay = as_object(cfg.env.replay)
    search: SearchConfig = as_object(cfg.search)

    rows, proved, per_theorem = [], {}, {k: {"theorem": t.name, "key": k} for k, t in zip(keys, tasks)}
    ceiling_search = SearchConfig(max_expansions=None, timeout_s=60.0)
    for name, budget in ((CEILING, ceiling_search), (CEILING_IN_BUDGET, search)):
        ceiling = {r["key"]: r for r in replay_ceiling(tasks, replay, budget, name)}
        row, proved[name] = outcome_row(name, ceiling, keys)
        row["provenance"] = row_provenance(commit, command, plain_cfg)
        rows.append(row)
        for k in keys:
            per_theorem[k][name] = classify(ceiling[k])
        log.info("%s: %d of %d theorems replay with their recorded tactics", name, row["proved"], len(keys))

    from retriever.registry import missing_training
    absent = {}
    session = None
    try:
        for name in retrievers:
            reason = missing_training(name, cfg)
            if reason:  # not faked: the row is left out and the files say why
                log.warning("%s: left out: %s", name, reason)
                absent[name] = reason
                continue
            run_cfg = OmegaConf.merge(cfg, {"retriever": {"name": name},
                                            "run_name": f"{cfg.run_name or 'replay'}-{name}"})
            if session is None:
                from prover.search.actors import RaySession
                session = RaySession(cfg.ray)
            from prover.search.benchmark import run_one
            run_one(run_cfg, session, command=command)
            records = ResultsFile(Path(cfg.out_dir) / run_name(run_cfg) / "results.jsonl").latest()
            row, proved[name] = outcome_row(name, records, keys)
            row["run"] = str(Path(cfg.out_dir) / run_name(run_cfg))
            row["provenance"] = row_provenance(commit, command, plain_cfg)
            if partial:
                row["partial"] = partial
            rows.append(row)
            for k in keys:
                per_theorem[k][name] = classify(records[k]) if k in records else "error"
                if k in records and records[k].get("proof"):
                    per_theorem[k][f"{name}_proof"] = records[k]["proof"]
            log.info("%s: %d of %d proved; outcomes %s", name, row["proved"], len(keys), row["outcomes"])
    finally:
        if session is not None:
            session.close()

    comparisons = add_intervals(rows, proved, [r for r in retrievers if r in proved])
    from retriever.evaluation.bootstrap import N_RESAMPLES, SEED
    if training:
        training.pop("config", None)
        training.pop("augment", None)
    split = cfg.theorems.split or Path(cfg.theorems.source).stem
    dataset = Path(cfg.theorems.source).name
    result = {
        "benchmark": "search-replay", "env": ENV_REPLAY, "rate_label": RATE_LABEL,
        "command": command, "git_commit": commit, "machine": machine(), "config": plain_cfg,
        "dataset": dataset, "split": split, "n_theorems_in_split": len(all_in_split), "n_theorems": len(tasks),
        "settings": {"focus_goals": replay.focus_goals, "num_tactics": cfg.generator.num_tactics,
                     "num_beams": cfg.generator.get("num_beams"),
                     "max_expansions": search.max_expansions, "timeout_s": search.timeout_s,
                     "generator": cfg.generator.model, "k": cfg.retriever.k, "retrievers": retrievers},
        "generator_training": training,
        "ceiling_search": {"max_expansions": ceiling_search.max_expansions, "timeout_s": ceiling_search.timeout_s},
        "bootstrap": {"resamples": N_RESAMPLES, "seed": SEED, "level": 0.95, "paired_over": "theorems"},
        "rows": rows, "absent": absent, "comparisons": comparisons,
        "per_theorem": list(per_theorem.values()),
        "seconds": round(time.perf_counter() - t0, 1), "peak_rss_gib": round(peak_rss_gib(), 2),
    }
    out = Path(args.results_dir)
    stem = f"search-replay-{dataset}-{split.replace('/', '-')}" + (f"-{args.tag}" if args.tag else "")
    write_results(out / stem, result, markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
