"""Tactic generator benchmark: one trained generator under premise conditions, side by side.

    python benchmarks/generator.py --config configs/generator/benchmark_mini.yaml
    python benchmarks/generator.py --config configs/generator/benchmark_real.yaml   # real tactics

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

import argparse
import gzip
import json
import logging
import sys
from dataclasses import asdict, replace
from pathlib import Path


# Run as a script, this file's folder comes first on sys.path and its name would shadow the
# `generator` package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import numpy as np  # noqa: E402

from generator.evaluate import (condition_premises, eval_examples, evaluate_condition,  # noqa: E402
                                evaluate_frequency, evaluate_neighbors, frequent_tactics, throughput)
from generator.model import TacticGenerator, frequent_targets  # noqa: E402
from generator.settings import GenerateConfig, GeneratorBenchmarkConfig  # noqa: E402
from prover.config import load_config, to_plain  # noqa: E402
from prover.data.dataset import Dataset  # noqa: E402
from prover.data.jsonio import load_json, write_json  # noqa: E402
from prover.data.tactic_steps import tactic_level  # noqa: E402
from prover.utils.logs import setup_logging  # noqa: E402
from prover.utils.runinfo import (machine, peak_rss_gib, provenance_lines, require_clean_tree,  # noqa: E402
                                  require_full_training, row_provenance)
from retriever.evaluation.bootstrap import N_RESAMPLES, SEED, mean_interval, paired_intervals  # noqa: E402
from retriever.registry import build_retriever, missing_training  # noqa: E402

log = logging.getLogger("benchmark.generator")

FREQUENCY = "frequency"
NEIGHBORS = "neighbors"  # no model: the tactics of the nearest training states, by their votes
BASELINES = (FREQUENCY, NEIGHBORS)
NO_RETRIEVER = ("none", "gold", *BASELINES)


def outcomes_path(out_dir: Path, stem: str, condition: str) -> Path:
    return out_dir / "outcomes" / f"{stem}-{condition}.jsonl.gz"


def write_outcomes(path: Path, keys: list[str], per_example: dict[str, list]) -> None:
    """One line per example: its key and this row's outcomes (small: no generated text)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    names = list(per_example)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for i, key in enumerate(keys):
            rec = {"key": key}
            for m in names:
                v = per_example[m][i]
                rec[m] = round(v, 4) if isinstance(v, float) else v
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def read_outcomes(path: Path) -> tuple[list[str], dict[str, np.ndarray]]:
    rows = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
    names = [k for k in (rows[0] if rows else {}) if k != "key"]
    return [r["key"] for r in rows], {m: np.asarray([r[m] for r in rows], dtype=np.float64) for m in names}


def _rounded(ci: tuple[float, float]) -> list[float]:
    return [round(ci[0], 6), round(ci[1], 6)]


def theorem_of(key: str) -> str:
    """The theorem of an example key (`file::theorem#tactic index`): the bootstrap's cluster."""
    return key.rsplit("#", 1)[0]


def add_intervals(result: dict, per_example: dict[str, dict[str, np.ndarray]], n: int,
                  keys: list[str] | None = None) -> None:
    """95% paired-bootstrap intervals: each row's EM@1, EM@n (and gold log-likelihood); and the
    EM@n differences of every other row to `none` (what premises add) and of every model row
    to `frequency` and to `neighbors` (what the model adds over the most frequent training
    tactics, and over the nearest training states' tactics alone). One seed and
    the same resamples throughout, as in the retrieval benchmark; with `keys` (the examples'),
    a resample draws theorems with all their tactics."""
    clusters = [theorem_of(k) for k in keys] if keys is not None else None
    result["bootstrap"] = {"resamples": N_RESAMPLES, "seed": SEED, "level": 0.95,
                           "paired_over": "theorems" if clusters else "tactics"}
    metrics = {"hit@1": "exact_match@1", f"hit@{n}": f"exact_match@{n}", "loglik": "gold_loglik"}
    for row in result["rows"]:
        values = per_example.get(row["condition"])
        if not values:
            continue
        for src, dst in metrics.items():
            if src in values:
                row[f"{dst}_ci"] = _rounded(mean_interval(values[src], clusters=clusters))
    comparisons = []
    at_n = f"hit@{n}"
    conds = [r["condition"] for r in result["rows"] if r["condition"] in per_example]
    pairs = [(c, "none") for c in conds if c not in ("none", *BASELINES) and "none" in conds]
    for base in BASELINES:
        pairs += [(c, base) for c in conds if c not in BASELINES and base in conds]
    for a, b in pairs:
        va, vb = per_example[a][at_n], per_example[b][at_n]
        ci = paired_intervals(va, vb, clusters=clusters).diff
        comparisons.append({"a": a, "b": b, "metric": f"exact_match@{n}",
                            "diff": round(float(va.mean() - vb.mean()), 6), "diff_ci": _rounded(ci)})
    # What premises add to the gold tactic's likelihood: finer than exact match, which a small
    # model rarely reaches on tactics that cite a premise.
    for a, b in pairs:
        if b == "none" and "loglik" in per_example[a] and "loglik" in per_example[b]:
            va, vb = per_example[a]["loglik"], per_example[b]["loglik"]
            comparisons.append({"a": a, "b": b, "metric": "gold_loglik",
                                "diff": round(float(va.mean() - vb.mean()), 6),
                                "diff_ci": _rounded(paired_intervals(va, vb, clusters=clusters).diff)})
    result["comparisons"] = comparisons


def _pct(v: float) -> str:
    return f"{100 * v:.1f}"


def _with_ci(row: dict, key: str) -> str:
    ci = row.get(f"{key}_ci")
    return _pct(row[key]) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")


def row_label(row: dict) -> str:
    dirty = (row.get("provenance") or {}).get("dirty")
    return (row["condition"] + (" (dirty tree)" if dirty else "")
            + (f" ({row['partial']})" if row.get("partial") else ""))


def _pool_text(size: int | None) -> str:
    if size is None:  # written before generators had pools: beam search alone, said as it was then
        return ""
    if not size:
        return " (beam search alone)"
    return (f" plus the model's pool of its {size} most frequent training tactics, the best of both "
            "by the model's own score kept")


def _neighbors_text(nb: dict | None) -> str:
    if not nb:
        return ""
    return (f"; and the tactics of the {nb['k']} nearest training states (BM25), their distribution "
            f"(softmax of the scores at temperature {nb['temperature']:g}) mixed with the model's at "
            f"weight {nb['weight']:g} (generator/neighbors.py)")


def markdown(result: dict) -> str:
    n = result["config"]["num_samples"]
    train = result.get("model_training") or {}
    trained = (f", trained {train['steps']} steps on {train.get('train_split')} "
               f"({train.get('train_pairs')} pairs, {train.get('cpu_seconds', train.get('seconds'))} CPU-s)"
               if train.get("steps") is not None else "")
    lines = [f"# Tactic generator: {result['dataset']} {result['split']}", "",
             f"Model `{result['model']}` ({result['model_params'] / 1e6:.2f}M parameters{trained}), "
             f"{result['n_examples']} tactics ({result['n_with_gold']} with gold premises), "
             f"beam {result.get('num_beams') or n}{_pool_text(result.get('pool_size'))}{_neighbors_text(result.get('neighbors'))}, "
             f"input budget {result['max_bytes']} bytes"
             + (f", the input showing the {result['neighbor_tactics_in_input']} most probable neighbour tactics "
                "(retrieval-augmented, generator/inputs.py)" if result.get("neighbor_tactics_in_input") else "")
             + (f", candidates also the neighbours' one-premise tactics filled with each of the top "
                f"{result['instantiate']} premises shown (generator/instantiate.py)" if result.get("instantiate") else "")
             + (f", +{result['premise_bonus']:g} nats to a candidate naming a premise shown"
                if result.get("premise_bonus") else "")
             + ", "
             f"retrieved premises: top {result['config']['k']}.", "",
             f"| premises | EM@1 (%) | EM@{n} (%) | gold log-lik | per byte | premises shown | seconds |",
             "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        if r["condition"] in BASELINES:
            lines.append(f"| {row_label(r)} (no model) | {_with_ci(r, 'exact_match@1')} "
                         f"| {_with_ci(r, f'exact_match@{n}')} | – | – | – | – |")
            continue
        ci = r.get("gold_loglik_ci")
        ll = f"{r['gold_loglik']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
        lines.append(f"| {row_label(r)} | {_with_ci(r, 'exact_match@1')} | {_with_ci(r, f'exact_match@{n}')} "
                     f"| {ll} | {r['gold_loglik_per_byte']:.3f} | {r['premises_shown']:.1f} | {r['seconds']} |")
    for cond, reason in (result.get("absent") or {}).items():
        lines.append(f"| {cond} | absent: {reason} | | | | | |")
    b = result.get("bootstrap") or {}
    if result.get("comparisons"):
        lines += ["", f"Paired differences at EM@{n} (percentage points, 95% bootstrap intervals, "
                  f"{b.get('resamples')} resamples of the {b.get('paired_over', 'tactics')}, seed {b.get('seed')}):", "",
                  "| comparison | difference | 95% interval |", "|---|---|---|"]
        for c in result["comparisons"]:
            if c["metric"] != f"exact_match@{n}":
                continue
            lo, hi = c["diff_ci"]
            lines.append(f"| {c['a']} − {c['b']} | {100 * c['diff']:+.1f} | [{100 * lo:+.1f}, {100 * hi:+.1f}] |")
        ll = [c for c in result["comparisons"] if c["metric"] == "gold_loglik"]
        if ll:
            lines += ["", "Paired differences of the gold tactic's log-likelihood (nats per tactic, 95% "
                      "bootstrap intervals, same resamples):", "",
                      "| comparison | difference | 95% interval |", "|---|---|---|"]
            lines += [f"| {c['a']} − {c['b']} | {c['diff']:+.2f} | [{c['diff_ci'][0]:+.2f}, {c['diff_ci'][1]:+.2f}] |"
                      for c in ll]
    freq = result.get("frequency")
    among = "the top k of beam and pool together" if result.get("pool_size") else "the top k of beam search"
    if result.get("neighbors"):
        among = "the top k of beam, pool and neighbours together, by the mixed score"
    lines += ["", f"EM@k: the recorded tactic (whitespace-normalized) is among {among}. "
              "Gold log-lik: " + ("the model's log-probability of the recorded tactic (neighbours not "
                                  "mixed in)" if result.get("neighbors") else "log-probability of the recorded tactic")
              + ", summed over its bytes; per byte: "
              "summed over all tactics, divided by their bytes. Brackets: 95% paired bootstrap intervals "
              f"({b.get('resamples')} resamples of the {b.get('paired_over', 'tactics')}, seed {b.get('seed')})."]
    if freq:
        shown = ", ".join(f"`{t}`" for t, _ in freq["tactics"][:n])
        lines += ["", f"frequency: no model; the {n} most frequent tactics of the {freq['train_split']} "
                  f"training examples ({freq['n_examples']} tactics), proposed in that order for every state: "
                  f"{shown}."]
        if freq.get("granularity") == "tactic":
            lines.append("Those are the model's own training examples: the split's proofs split into "
                         "tactic-level steps (prover/data/tactic_steps.py).")
        elif freq.get("statement_level"):
            lines.append("Those training examples are statement-level (one pseudo-step per theorem: the "
                         "whole proof), so this baseline proposes whole-proof texts, not single tactics.")
    nb = result.get("neighbors_baseline")
    if nb:
        lines += ["", f"neighbors: no model; the {n} most probable tactics of the {nb['k']} training states "
                  f"nearest to the state (BM25 over the {nb['n_states']} {nb['train_split']} training "
                  "examples), each state's vote a softmax of its score at temperature "
                  f"{nb['temperature']:g}: the neighbour half of the mixture alone."]
    if result.get("throughput"):
        lines += ["", "| batch | states/s (beam %d) |" % (result.get("throughput_beams") or n), "|---|---|"]
        lines += [f"| {bs} | {v:.2f} |" for bs, v in result["throughput"].items()]
    per_row = provenance_lines(result, "condition")
    last = "Last run: " if per_row else ""
    if result.get("note"):  # what the run's own fields do not say (a device run, a second look)
        lines += ["", result["note"]]
    lines += ["", f"Machine: {result['machine'].get('cpu', '')} ({result['machine'].get('cpu_count')} cores)"
              f"{', GPU ' + result['machine']['gpu'] if result['machine'].get('gpu') else ''}. "
              f"{last}Commit {result['git_commit']}.", f"{last}Command: `{result['command']}`"]
    return "\n".join(lines) + "\n" + per_row


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
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=None)
    p.add_argument("--force", action="store_true", help="recompute conditions already in the results file")
    p.add_argument("--allow-dirty", action="store_true",
                   help="run on uncommitted code or configs; the rows written are marked dirty")
    p.add_argument("--allow-partial", action="store_true",
                   help="score a model its time budget stopped before the planned step; its rows are marked partial")
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)  # before any work: a refused run costs nothing
    setup_logging()
    cfg = load_config(GeneratorBenchmarkConfig, args.config, args.overrides)
    command = " ".join(["python benchmarks/generator.py", *(["--config", args.config] if args.config else []),
                        *args.overrides])
    plain_cfg = to_plain(cfg)
    summary_path = Path(cfg.model).parent / "summary.json"
    # Before any work: the recipe's model is the one at its planned step.
    partial = require_full_training({"generator": load_json(summary_path) if summary_path.exists() else None},
                                    args.allow_partial).get("generator")
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
    stem = f"generator-{ds.name}-{cfg.data.split.replace('/', '-')}" + (f"-{cfg.results_tag}" if cfg.results_tag else "")
    out = Path(cfg.results_dir)
    json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
    previous = load_json(json_path) if json_path.exists() and not args.force else {}
    done = {r["condition"]: r for r in previous.get("rows", [])}

    corpus = ds.corpus()
    examples = eval_examples(ds.theorems(cfg.data.split), corpus, cfg.max_examples, cfg.seed)
    keys = [e.key for e in examples]
    gen = TacticGenerator.load(cfg.model, generate=GenerateConfig(instantiate=cfg.instantiate,
                                                                  premise_bonus=cfg.premise_bonus))
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
    n = cfg.num_samples
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
        write_json(json_path, result)
        md_path.write_text(markdown(result))

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
            premises = condition_premises(cond, examples, corpus, retriever, cfg.k)
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
