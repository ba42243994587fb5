"""Run registered retrievers side by side on one split and write results JSON + Markdown.

Rows are written as each finishes and a rerun skips rows already in the results file, so
an interrupted benchmark resumes instead of starting over.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from prover.config import to_plain
from prover.data.dataset import Dataset
from prover.data.jsonio import write_json
from prover.data.pairs import premise_queries
from prover.utils.runinfo import (git_commit, machine, peak_rss_gib, provenance_lines, require_full_training,
                                  row_provenance)
from retriever.evaluation.cost import retriever_cost
from retriever.evaluation.bootstrap import N_RESAMPLES, SEED, mean_interval, paired_intervals
from retriever.evaluation.evaluate import (CI_METRICS, comparison_table, evaluate, latency, markdown_table,
                                per_query_from_rankings, robustness_table, training_table,
                                under_trained)
from retriever.registry import build_retriever, scope_of, training_config
from retriever.evaluation.robustness import perturbed_queries
from retriever.evaluation.trained_on import check_trained_on
from retriever.models.car import car_run_dir

# Which training runs (folders under the models' run_dir) a row's numbers depend on.
TRAINED_BY = {"cfr": ["pretrain", "cfr"], "cfr-conventional": ["pretrain", "cfr-conventional"],
              "bm25+usage+cfr-conventional": ["pretrain", "cfr-conventional"],
              "bm25+usage+locality+cfr-conventional": ["pretrain", "cfr-conventional"],
              "bm25+usage+locality+cfr-conventional+car": ["pretrain", "cfr-conventional", "car-conventional"],
              "hybrid": ["pretrain", "cfr"],
              "reprover": ["reprover"],
              "fusion": ["pretrain", "cfr-conventional", "fusion"],
              "fusion+car": ["pretrain", "cfr-conventional", "fusion", "car-conventional"]}
for _first in ("cfr", "cfr-conventional"):
    for _row in (f"{_first}+car", f"{_first}+car-only"):
        TRAINED_BY[_row] = ["pretrain", _first, car_run_dir("", _first).name]

log = logging.getLogger(__name__)


def trained_by(name: str, training: Any) -> list[str]:
    """The training stages row `name` rests on, `training` being the retriever training config
    whose run folder holds the models (its `fusion.members`). A fusion rests on the stages of its
    own members (a fusion without CFR needs no pretrain and no CFR) and on its own fit."""
    if name not in ("fusion", "fusion+car"):
        return TRAINED_BY.get(name, [])
    stages = members_trained_by(list(training.fusion.members)) + ["fusion"]
    return stages + (TRAINED_BY["fusion+car"][-1:] if name == "fusion+car" else [])


def results_stem(dataset: Dataset, split: str, tag: str = "") -> str:
    return f"retrieval-{dataset.name}-{split.replace('/', '-')}" + (f"-{tag}" if tag else "")


def run_retrieval_benchmark(cfg: Any, force: bool = False, command: str = "", allow_partial: bool = False) -> dict:
    """Score `cfg.retrievers` on one split. A row built on a model its time budget stopped
    before its planned step is refused unless `allow_partial`, and then marked partial."""
    # The commit of the code this process runs: read before anything else, since the tree may
    # change while the data loads (the code is already imported by then).
    commit = git_commit()
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    out_dir = Path(cfg.results_dir)
    stem = results_stem(ds, cfg.data.split, cfg.results_tag)
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    previous = json.loads(json_path.read_text()) if json_path.exists() else {}
    # force redoes the rows this run names, in their places; the file's other rows stay.
    redo = set(cfg.retrievers) if force else set()
    done = {r["retriever"]: r for r in previous.get("rows", [])}

    t0 = time.perf_counter()
    corpus = ds.corpus()
    theorems = ds.theorems(cfg.data.split)
    queries, no_gold = premise_queries(theorems, corpus, ds.skips)
    load_seconds = time.perf_counter() - t0
    log.info("%s %s: %d queries with gold premises, %d tactics without", ds.name, cfg.data.split,
             len(queries), no_gold)

    # The file-level commit, command and config say who wrote the file last; each row carries
    # its own in row["provenance"], which a resumed run leaves as it was.
    plain_cfg = to_plain(cfg)
    result = {
        "benchmark": "retrieval", "command": command, "dataset": ds.name,
        "data_root": str(cfg.data.root), "split": cfg.data.split, "config": plain_cfg,
        "git_commit": commit, "machine": machine(),
        "n_theorems": len(theorems), "n_queries": len(queries), "n_tactics_without_premises": no_gold,
        "skipped": ds.skips.as_dict(), "load_seconds": round(load_seconds, 2), "rows": [],
    }
    keys = [(q.theorem, q.tactic_index) for q in queries]
    per_query: dict[str, dict[str, np.ndarray]] = {}  # row -> metric -> per-query values
    # Rows of an earlier run that this one does not name stay, first, in their order: naming
    # only the new rows adds them to the file instead of dropping what was computed before.
    names = list(done) + [n for n in cfg.retrievers if n not in done]
    scope = scope_of(cfg.retriever, cfg.data)  # the retriever choice of every row, on this split
    for name in names:
        if name in done and name not in redo:
            log.info("%s: already in %s, skipped (--force to redo)", name, json_path)
            result["rows"].append(done[name])
            rankings = out_dir / "rankings" / f"{stem}-{name}.jsonl.gz"
            if rankings.exists():
                got_keys, values = per_query_from_rankings(rankings)
                if got_keys == keys:  # paired only over the very same queries
                    per_query[name] = values
            continue
        # Checked before any work: a model trained on another strategy's train split has seen
        # the evaluated theorems' proofs (random/train holds most of novel_premises/test).
        training = training_summaries(scope, trained_by(name, training_config(scope))) if name in TRAINED_BY else None
        partial = require_full_training(training, allow_partial) if training else {}
        if training:
            check_trained_on(ds, cfg.data.split, training, Path(training_config(scope).run_dir))
        t1 = time.perf_counter()
        retriever = build_retriever(name, corpus, scope)
        index_seconds = time.perf_counter() - t1
        res = evaluate(retriever, queries, ks=cfg.eval.ks, rankings_k=cfg.eval.rankings_k,
                       batch_size=cfg.eval.batch_size,
                       rankings_path=out_dir / "rankings" / f"{stem}-{name}.jsonl.gz")
        row = res.as_dict() | latency(retriever, queries, cfg.latency_queries)
        row["index_seconds"] = round(index_seconds, 2)
        row |= retriever_cost(retriever, queries)
        if cfg.robustness:
            row["robustness"] = robustness(retriever, queries, res.metrics, cfg)
        if training is not None:
            row["training"] = training
        if partial:
            row["partial"] = partial
        # The training record stays in row["training"] (the tables read it there).
        row["provenance"] = row_provenance(commit, command, plain_cfg)
        result["rows"].append(row)
        per_query[name] = res.per_query
        add_intervals(result, per_query, [t for t, _ in keys])
        result["peak_rss_gib"] = round(peak_rss_gib(), 2)
        write_json(json_path, result)
        md_path.write_text(_markdown(result, ds.name, cfg.data.split))
        log.info("%s: R@10 %.3f MRR %.3f", name, row["metrics"].get("R@10", float("nan")),
                 row["metrics"].get("MRR", float("nan")))
    add_intervals(result, per_query, [t for t, _ in keys])
    write_json(json_path, result)
    md_path.write_text(_markdown(result, ds.name, cfg.data.split))
    return result


NO_LEARNING = {"bm25", "bm25-plain", "locality", "usage", "random", "neighbors", "neighbors-tactic"}


def is_no_learning(name: str) -> bool:
    """Nothing in the row is trained: a lexical or prior retriever, or a fusion of such."""
    return all(member in NO_LEARNING for member in name.split("+"))


def first_stage(name: str) -> str | None:
    """The row a re-ranking row re-ranks (`cfr-conventional+car` -> `cfr-conventional`)."""
    return name[: -len("+car")] if name.endswith("+car") else None


def add_intervals(result: dict, per_query: dict[str, dict[str, np.ndarray]],
                  theorems: Sequence[str] | None = None) -> None:
    """Give each row with per-query values 95% paired-bootstrap intervals: `<metric>_ci` of
    its R@10 and MRR, and, when those rows are present, `R@10_ratio_to_bm25_ci` and
    `R@10_diff_to_locality_ci`. All use one seed and the same resamples, so every interval of
    a table comes from one bootstrap. `theorems[i]`: query i's theorem; a resample draws
    theorems, with all their queries (a theorem's tactics are not independent). Fractions,
    as the metrics are."""
    result["bootstrap"] = {"resamples": N_RESAMPLES, "seed": SEED, "level": 0.95,
                           "paired_over": "theorems" if theorems is not None else "queries"}

    def rounded(ci: tuple[float, float]) -> list[float]:
        return [round(ci[0], 6), round(ci[1], 6)]

    # The learned rows' bar: the no-learning row with the highest R@10 in this very table.
    baselines = {n: v["R@10"].mean() for n, v in per_query.items()
                 if is_no_learning(n) and n != "random" and "R@10" in v}
    best = max(baselines, key=baselines.get) if baselines else None
    result["best_no_learning"] = best

    for row in result["rows"]:
        values = per_query.get(row["retriever"])
        if not values:
            continue
        for metric in CI_METRICS:
            if metric in values:
                row[f"{metric}_ci"] = rounded(mean_interval(values[metric], clusters=theorems))
        if under_trained(row):
            continue  # not a baseline yet: no comparison is drawn from it
        for ref, key, stat in (("bm25", "R@10_ratio_to_bm25_ci", "ratio"),
                               ("locality", "R@10_diff_to_locality_ci", "diff"),
                               (best, "R@10_diff_to_best_baseline_ci", "diff"),
                               # CAR's own contribution: the re-ranked row against its first stage.
                               (first_stage(row["retriever"]), "R@10_gain_over_first_stage_ci", "diff")):
            other = per_query.get(ref, {}).get("R@10")
            if ref == row["retriever"] or other is None or "R@10" not in values:
                continue
            ci = getattr(paired_intervals(values["R@10"], other, clusters=theorems), stat)
            if ci is not None:
                row[key] = rounded(ci)


def _markdown(result: dict, dataset: str, split: str) -> str:
    rows = [r | {"retriever": row_label(r)} for r in result["rows"]]
    parts = [markdown_table(rows, f"Premise retrieval: {dataset} {split}")]
    comparisons = comparison_table(rows)
    if comparisons:
        b = result.get("bootstrap", {})
        parts.append(f"### Paired comparisons (95% bootstrap intervals, {b.get('resamples')} "
                     f"resamples of the {b.get('paired_over', 'queries')}, seed {b.get('seed')})\n\n" + comparisons
                     + (f"\nBest no-learning row (highest R@10 here, nothing trained): "
                        f"{result['best_no_learning']}.\n" if result.get("best_no_learning") else ""))
    rob = robustness_table(rows)
    if rob:
        parts.append("### Robustness (paper's checks)\n\n" + rob)
    train = training_table(rows)
    if train:
        parts.append("### Training spent per row\n\n" + train)
    return "\n".join(parts) + _footer(result)


LABELS = {"shuffle": "shuffled", "drop": "20% dropped"}


def robustness(retriever, queries, metrics: dict, cfg: Any) -> dict:
    """Relative change of R@10 and MRR under each perturbation, on the queries it applies to."""
    out = {}
    for kind in ("shuffle", "drop"):
        orig, pert = perturbed_queries(queries, kind, seed=0)
        if not orig:
            continue
        before = metrics if len(orig) == len(queries) else evaluate(
            retriever, orig, ks=cfg.eval.ks, rankings_k=cfg.eval.rankings_k,
            batch_size=cfg.eval.batch_size,
            desc=f"{retriever.name}: rank premises (unperturbed, {LABELS[kind]} subset)").metrics
        after = evaluate(retriever, pert, ks=cfg.eval.ks, rankings_k=cfg.eval.rankings_k,
                         batch_size=cfg.eval.batch_size,
                         desc=f"{retriever.name}: rank premises ({LABELS[kind]} hypotheses)").metrics
        out[kind] = {"n_queries": len(orig)}
        for m in ("R@10", "MRR"):
            out[kind][m] = after[m]
            out[kind][f"{m}_unperturbed"] = before[m]
            out[kind][f"{m}_rel_change"] = round((after[m] - before[m]) / before[m], 4) if before[m] else None
    return out


def members_trained_by(members: Sequence[str]) -> list[str]:
    """The training stages a list of fusion members rests on (not the fusion's own fit)."""
    stages = [s for m in members for s in TRAINED_BY.get(m, ["pretrain", m] if m.startswith("cfr") else [])]
    return list(dict.fromkeys(stages))


def training_summaries(cfg: Any, stages: list[str]) -> dict:
    """The summary.json of each training run a row depends on (steps, seconds, budget)."""
    run_dir = Path(training_config(cfg).run_dir)
    out = {}
    for stage in stages:
        path = run_dir / stage / "summary.json"
        out[stage] = json.loads(path.read_text()) if path.exists() else None
    return out


def row_label(row: dict) -> str:
    """A row's name in the tables, marked when it was computed from uncommitted code, when its
    training stopped inside its warm-up (not a baseline yet) or before its planned step."""
    dirty = (row.get("provenance") or {}).get("dirty")
    why = under_trained(row)
    partial = "; ".join(f"{stage} {note}" for stage, note in (row.get("partial") or {}).items())
    return (row["retriever"] + (" (dirty tree)" if dirty else "")
            + (f" (under-trained: {why})" if why else "") + (f" ({partial})" if partial else ""))


def _footer(result: dict) -> str:
    m = result["machine"]
    per_row = provenance_lines(result, "retriever")
    # With rows from several runs, the file-level commit and command are only the last run's.
    last = "Last run: " if per_row else ""
    # Configs of the oldest results files have no retriever.device.
    device = result["config"].get("retriever", {}).get("device", "an unrecorded device")
    return (f"\n{result['n_queries']} queries with at least one gold premise "
            f"({result['n_tactics_without_premises']} tactics without one are not scored), "
            f"{result['n_theorems']} theorems. R/P/F1 in %, nDCG graded (1 gold, 0.3 same module), "
            f"MRR over the top {result['config']['eval']['rankings_k']}. "
            f"Latency: one query at a time over the first {result['config']['latency_queries']}.\n\n"
            f"Machine: {m.get('cpu')} ({m.get('cpu_count')} cores){', GPU ' + m['gpu'] if m.get('gpu') else ''}, "
            f"models on {device}. {last}Commit {result['git_commit']}.\n"
            f"{last}Command: `{result['command']}`\n" + per_row + _corrections(result))


def _corrections(result: dict) -> str:
    """What a later session found wrong in the file (prover/benchmarking/corrections.py), kept
    when a resumed run rewrites its Markdown; numbers are never edited."""
    notes = [n if isinstance(n, str) else n.get("note", "") for n in result.get("corrections") or []]
    return ("\n## Corrections\n\n" + "".join(f"- {n}\n" for n in notes)) if notes else ""
