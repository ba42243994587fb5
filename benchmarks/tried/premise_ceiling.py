"""How much can the premises shown change the generator's suggestions? An upper bound, on select.

    # the generator's candidates per state, once (benchmarks/tried/candidate_ranker.py, resumable):
    python benchmarks/tried/candidate_ranker.py dump --split leandojo-real/select --premises none gold fusion
    python benchmarks/tried/premise_ceiling.py

Issue 28 asks that fusion premises beat none at EM@8. No ordering of the candidates can gain
more than the states whose recorded tactic is among the candidates with premises and not
without them, so this measures that room, two ways:

1. A census of the recorded tactics: how many name a gold premise; how many name exactly one,
   once (a template a retrieved premise could fill, generator/tried/instantiate.py); how many of
   those have their shape among the 50 nearest training states' templates (what the shipped
   instantiation fills); and where the fusion ranks their premise.
2. Coverage (the recorded tactic among the candidates, the ceiling of any ordering) of the
   dumped candidates under none, gold and fusion premises, and with one more lever added:
   generic templates, the K most frequent one-premise shapes of the training tactics
   (`rw [_]`, `exact _`, `simp [_]`, ... mined, not hand-written) each filled with the top m
   premises shown. Coverage with premises minus coverage without, per theorem-clustered
   bootstrap, bounds what a perfect ordering of these candidates could gain from the premises
   (at any k of EM@k); candidates not generated here are outside the bound.

Intervals resample theorems (2000 resamples, seed 0). Writes
benchmarks/results/premise-ceiling-mathlib-src-<split>.{json,md}.
"""
from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from generator.evaluate import condition_premises, eval_examples
from generator.inputs import normalize_tactic
from generator.tried.instantiate import fill, template
from generator.model import TacticGenerator
from generator.neighbors import TacticNeighbors
from generator.settings import GeneratorBenchmarkConfig
from prover.benchmarking.candidate_dumps import CONFIG, dump_path, read_dump
from prover.benchmarking.harness import (N_RESAMPLES, SEED, add_allow_dirty, load_config, machine,
                                         mean_interval, model_training, paired_intervals, parser, require_clean_tree,
                                         to_plain, write_and_print)
from prover.data.dataset import Dataset
from prover.utils.logs import setup_logging
from retriever.registry import build_retriever

log = logging.getLogger("benchmark.premise_ceiling")

NEAR = 50  # the nearest training states whose templates the shipped instantiation fills
SHAPES = (10, 40)  # generic templates tried: the K most frequent shapes
FILLS = (3, 10)  # ... each filled with the top m premises shown
RANKS = (1, 3, 10)


def shapes(neighbors: TacticNeighbors) -> Counter:
    """(shape, components written) -> count over the training tactics that name one premise
    once; the shape is the tactic with its premise cut out (`rw [§]`). States left out (the
    evaluated theorems') do not count."""
    out: Counter = Counter()
    hidden = neighbors.hidden
    for i, (tactic, premises) in enumerate(zip(neighbors.tactics, neighbors.premises or [])):
        if hidden is not None and hidden[i]:
            continue
        slot = template(tactic, premises)
        if slot is not None:
            out[(tactic[:slot[0]] + "§" + tactic[slot[1]:], slot[2])] += 1
    return out


def generic(top: list[tuple[str, int]], names: list[str]) -> set[str]:
    """Every shape filled with every premise (normalized)."""
    return {normalize_tactic(fill(shape, (shape.index("§"), shape.index("§") + 1, parts, ""), name))
            for name in names for shape, parts in top}


def run(cfg, split: str, run_dir: Path, commit: str, command: str) -> dict:
    t0 = time.process_time()
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
    corpus = ds.corpus()
    examples = eval_examples(ds.theorems(split), corpus, 0, cfg.seed)
    nb = TacticGenerator.load(cfg.model).neighbors
    if nb is None or nb.premises is None:
        raise SystemExit(f"{cfg.model}: no tactic neighbours with their premises (nothing to instantiate)")
    nb.exclude({f"{e.file_path}::{e.theorem}" for e in examples})
    fusion = condition_premises("fusion", examples, corpus, build_retriever("fusion", corpus, cfg), max(cfg.k, 50))
    dumps = {}
    for cond in ("none", "gold", "fusion"):
        rows = {r["key"]: r for r in read_dump(dump_path(run_dir, split, cond))}
        missing = [e.key for e in examples if e.key not in rows]
        if missing:
            raise SystemExit(f"{split} {cond}: {len(missing)} states not dumped; run "
                             f"`python benchmarks/candidate_ranker.py dump --split {split} --premises {cond}`")
        dumps[cond] = [{normalize_tactic(c[0]) for c in rows[e.key]["cands"]} for e in examples]
    mined = shapes(nb)
    per: dict[str, np.ndarray] = {}

    # 1. census
    flags: dict[str, list[int]] = {"names a gold premise": [], "names one premise, once": [],
                                   "... its shape among the 50 nearest states' templates": []}
    flags.update({f"... and the fusion ranks its premise in the top {r}": [] for r in RANKS})
    for ex, ranked in zip(examples, fusion):
        gold = list(dict.fromkeys(corpus.premises[i].full_name for i in ex.gold))
        slot = template(ex.tactic, gold)
        target = normalize_tactic(ex.tactic)
        near = nb.nearest_states(ex.state, NEAR) if slot is not None else []
        shaped = any((s := template(nb.tactics[d], nb.premises[d])) is not None
                     and normalize_tactic(fill(nb.tactics[d], s, gold[0])) == target for d, _ in near)
        names = [p.full_name for p in ranked]
        rank = names.index(gold[0]) if shaped and gold[0] in names else len(names) + 1
        values = [bool(gold), slot is not None, shaped, *(rank < r for r in RANKS)]
        for key, v in zip(flags, values):
            flags[key].append(int(v))
    for key, v in flags.items():
        per[f"census | {key}"] = np.asarray(v, dtype=np.float64)

    # 2. coverage: the dumped candidates, then with generic templates
    shown = {"none": [[] for _ in examples],
             "gold": [[corpus.premises[i].full_name for i in ex.gold] for ex in examples],
             "fusion": [[p.full_name for p in ranked[: cfg.k]] for ranked in fusion]}
    golds = [normalize_tactic(e.tactic) for e in examples]
    for cond in ("none", "gold", "fusion"):
        per[f"coverage | {cond} | dumped candidates"] = np.asarray(
            [g in c for g, c in zip(golds, dumps[cond])], dtype=np.float64)
        for k in SHAPES:
            top = [s for s, _ in mined.most_common(k)]
            for m in FILLS:
                per[f"coverage | {cond} | + {k} generic templates x top {m}"] = np.asarray(
                    [g in c or g in generic(top, names[:m]) for g, c, names in zip(golds, dumps[cond], shown[cond])],
                    dtype=np.float64)

    clusters = [e.key.rsplit("#", 1)[0] for e in examples]
    result = {"benchmark": "premise_ceiling", "split": split, "git_commit": commit, "command": command,
              "config": to_plain(cfg), "machine": machine(), "model": cfg.model, "model_training": model_training(cfg.model),
              "n_states": len(examples), "n_theorems": len(set(clusters)),
              "shapes_mined": len(mined), "top_shapes": [[s, p, c] for (s, p), c in mined.most_common(max(SHAPES))],
              "bootstrap": {"resamples": N_RESAMPLES, "seed": SEED, "paired_over": "theorems"},
              "rows": [], "comparisons": []}
    for name, v in per.items():
        lo, hi = mean_interval(v, clusters=clusters)
        result["rows"].append({"row": name, "value": round(float(v.mean()), 6), "ci": [round(lo, 6), round(hi, 6)]})
    for name in per:
        parts = name.split(" | ")
        if parts[0] == "coverage" and parts[1] != "none":
            # Without premises nothing fills a template: every variant's none row is the dump's.
            b = "coverage | none | dumped candidates"
            lo, hi = paired_intervals(per[name], per[b], clusters=clusters).diff
            result["comparisons"].append({"a": name, "b": b, "diff": round(float((per[name] - per[b]).mean()), 6),
                                          "ci": [round(lo, 6), round(hi, 6)]})
    result["cpu_s"] = round(time.process_time() - t0, 1)
    return result


def _pct(x: dict) -> str:
    return f"{100 * x['value']:.1f} [{100 * x['ci'][0]:.1f}, {100 * x['ci'][1]:.1f}]"


def markdown(r: dict) -> str:
    rows = {x["row"]: x for x in r["rows"]}
    lines = [f"# Premise ceiling: mathlib-src {r['split']}", "",
             f"Generator `{r['model']}` and its candidates (beam 8, tactic pool, tactic neighbours, the "
             "neighbours' one-premise tactics filled with the top 3 premises shown), dumped by "
             f"`benchmarks/candidate_ranker.py`, for {r['n_states']} tactics of {r['n_theorems']} theorems. "
             "How much room the premises shown leave for any ordering (benchmarks/premise_ceiling.py).", "",
             "Census of the recorded tactics (% of tactics, 95% intervals resampling theorems):", "",
             "| recorded tactic | % |", "|---|---|"]
    lines += [f"| {k.split(' | ', 1)[1]} | {_pct(x)} |" for k, x in rows.items() if k.startswith("census")]
    conds = ["none", "gold", "fusion"]
    variants = list(dict.fromkeys(k.split(" | ")[2] for k in rows if k.startswith("coverage")))
    lines += ["", "Coverage: the recorded tactic among the candidates, the EM@k of a perfect ordering (%):", "",
              "| candidates | " + " | ".join(conds) + " |", "|---" * (len(conds) + 1) + "|"]
    lines += [f"| {v} | " + " | ".join(_pct(rows[f"coverage | {c} | {v}"]) for c in conds) + " |" for v in variants]
    lines += ["", "What premises can add: coverage with them minus the dumped candidates' without (points; paired, "
              f"{r['bootstrap']['resamples']} resamples of the theorems, seed {r['bootstrap']['seed']}):", "",
              "| candidates, with premises | difference | 95% interval |", "|---|---|---|"]
    for c in r["comparisons"]:
        a = c["a"].split(" | ")
        lines.append(f"| {a[2]}, {a[1]} | {100 * c['diff']:+.1f} | "
                     f"[{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}] |")
    top = ", ".join(f"`{s}`" for s in list(dict.fromkeys(s for s, _, _ in r["top_shapes"]))[:8])
    lines += ["", f"Generic templates: the most frequent of the {r['shapes_mined']} one-premise shapes of the "
              f"training tactics (the evaluated theorems' left out), first {top}; each written with as many "
              "dotted components as its training tactics wrote, and filled with the top m premises retrieved "
              f"(gold: all of them; fusion: the shipped first stage's top {r['config']['k']}).", "",
              f"Machine: {r['machine'].get('cpu', '')} ({r['machine'].get('cpu_count')} cores), {r['cpu_s']} CPU-s. "
              f"Commit {r['git_commit']}.", f"Command: `{r['command']}`"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default=CONFIG)
    p.add_argument("--split", default="leandojo-real/select")
    p.add_argument("--run-dir", default="runs/candidate-ranker", help="where candidate_ranker.py dumped")
    p.add_argument("--results-dir", default="benchmarks/results")
    add_allow_dirty(p)
    p.add_argument("overrides", nargs="*")
    args = p.parse_intermixed_args(argv)
    commit = require_clean_tree(args.allow_dirty)
    setup_logging()
    cfg = load_config(GeneratorBenchmarkConfig, args.config, args.overrides)
    command = "python benchmarks/tried/premise_ceiling.py " + " ".join(sys.argv[1:] if argv is None else argv)
    result = run(cfg, args.split, Path(args.run_dir), commit, command.strip())
    write_and_print(Path(args.results_dir) / f"premise-ceiling-mathlib-src-{args.split.replace('/', '-')}", result, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
