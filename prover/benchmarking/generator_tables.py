"""The tactic generator benchmark's rows: per-example outcomes, paired intervals and the Markdown.
Shared by benchmarks/tactic_generator.py and device_generator.py.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import N_RESAMPLES, SEED, corrections_markdown, mean_interval, paired_intervals
from prover.utils.runinfo import provenance_lines


FREQUENCY = "frequency"
NEIGHBORS = "neighbors"  # no model: the tactics of the nearest training states, by their votes
BASELINES = (FREQUENCY, NEIGHBORS)


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


def vote_text(temperature: float | None, one: bool = False) -> str:
    """How the neighbours' votes are weighted (generator/neighbors.py `vote`), in words: of all
    the scores, or (`one`) of one neighbour's."""
    if temperature is None:
        return "proportional to its raw BM25 score" if one else "votes proportional to the raw BM25 scores"
    return f"a softmax of its score at temperature {temperature:g}" if one else \
        f"softmax of the scores at temperature {temperature:g}"


def _neighbors_text(nb: dict | None) -> str:
    if not nb:
        return ""
    return (f"; and the tactics of the {nb['k']} nearest training states (BM25), their distribution "
            f"({vote_text(nb['temperature'])}) mixed with the model's at "
            f"weight {nb['weight']:g} (generator/neighbors.py)")


def tactics_per_state(config: dict) -> int:
    """The n of EM@n in a results file's config (`num_samples` in those written before the one
    setting was named num_tactics)."""
    return config["num_tactics"] if "num_tactics" in config else config["num_samples"]


def premises_k(config: dict) -> int:
    """The premises shown in a results file's config (a top-level `k` in those written before the
    benchmark read its retriever section's)."""
    return config["k"] if "k" in config else config["retriever"]["k"]


def markdown(result: dict) -> str:
    n = tactics_per_state(result["config"])
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
             f"retrieved premises: top {premises_k(result['config'])}.", "",
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
                  f"examples), each state's vote {vote_text(nb['temperature'], one=True)}: the neighbour half of "
                  "the mixture alone."]
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
    corrections = corrections_markdown(result)  # what a later session found wrong; numbers never edited
    return "\n".join(lines) + "\n" + per_row + ("\n" + "\n".join(corrections[1:]) + "\n" if corrections else "")
