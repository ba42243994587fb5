"""Choosing the tactic neighbours' settings on real tactics of theorems no reported number uses.

    python benchmarks/generator_neighbors_selection.py --config configs/generator/benchmark_real.yaml \
        [--select-split leandojo-real/select]

Settings are chosen on every traced tactic of `--select-split` (default leandojo-real/select,
the half of real val that choices are made on: prover/data/halves.py); numbers are reported on
the other half, leandojo-real/report. Earlier runs (the committed results) chose on the tactics
of real val that the generator benchmark's seeded subset did not score, which share theorems
with it; `--select-split none` reproduces that. For
each: the model's own candidates (beam 8 and its tactic pool, no premises) and the tactics of
the 50 training states nearest to the state, all scored once by the model. Then every setting of
the grid (k, temperature, weight) ranks the union of the model's candidates and the k nearest
states' tactics by the mixture log((1 - w) P_model + w P_neighbours), and counts EM@8; beside
them the model alone, the neighbours alone and the frequency baseline (the pool's first 8: the
most frequent training targets). The best setting is the best EM@8, the first in grid order on
a tie; it is chosen only when its paired interval over the shipped setting (configs/generator/
cpu.yaml's `neighbors`, one of the grid's), resampling theorems, lies wholly above zero;
otherwise the shipped one stays (`choose_within_noise`, DEVELOPING.md rule 4). Issue 62: the run
of issue 52 compared the best with the simplest setting (`SIMPLEST`, kept as a baseline row),
which never shipped. Writes benchmarks/results/tactic-neighbors-selection-<dataset>-<split>.{json,md}
and each tactic's outcome under every setting to per_query/<stem>.jsonl.gz.
Refuses a tree with uncommitted changes to code or configs unless --allow-dirty.
"""
from __future__ import annotations

import itertools
import logging
import sys
import time
from pathlib import Path

import numpy as np

from generator.evaluate import eval_examples
from generator.inputs import format_input, normalize_tactic
from generator.model import TacticGenerator
from generator.neighbors import mix, vote
from generator.settings import GeneratorBenchmarkConfig
from prover.benchmarking.harness import (add_allow_dirty, choose_within_noise, corrections_markdown, load_config, machine,
                                         mean_interval, model_training, paired_intervals, parser, require_clean_tree, to_plain,
                                         write_results)
from prover.benchmarking.per_query import write_per_query
from prover.data.dataset import Dataset
from prover.utils.logs import setup_logging
from prover.utils.progress import progress_bar


log = logging.getLogger("benchmark.generator_neighbors_selection")

KS = (10, 20, 50)
TEMPERATURES = (None, 1.0, 3.0, 10.0)  # None: votes proportional to the raw BM25 scores
WEIGHTS = (0.1, 0.3, 0.5, 0.7, 0.9)
N = 8
# The simplest setting, a baseline row: no network in the ranking (weight 1: the neighbours
# alone), the fewest neighbours, their raw BM25 scores (no temperature to set).
SIMPLEST = {"k": KS[0], "temperature": None, "weight": 1.0}
# What ships, which a new setting must beat beyond the noise (DEVELOPING.md rule 4).
SHIPPED_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "generator" / "cpu.yaml"


def shipped_setting(path: Path = SHIPPED_CONFIG) -> dict:
    from omegaconf import OmegaConf
    n = OmegaConf.load(path).neighbors
    return {"k": int(n.k), "temperature": None if n.temperature is None else float(n.temperature),
            "weight": float(n.weight)}


def setting_name(g: dict) -> str:
    return f"k {g['k']}, temperature {_temp(g['temperature'])}, weight {g['weight']:g}"


def choose(grid: list[dict], hits: list[list[int]], shipped: dict, theorems: list[str]) -> dict:
    """The rule for a close call over the grid: the best setting on select (the first of equal
    ones) against the shipped one (a setting of the grid), paired over theorems; the best only
    when that interval lies wholly above zero. Returns what was compared, the interval (points)
    and what is kept."""
    best = max(range(len(grid)), key=lambda i: grid[i]["em"])
    at = next(i for i, g in enumerate(grid) if all(g[k] == shipped[k] for k in ("k", "temperature", "weight")))
    diff = paired_intervals(np.asarray(hits[best], dtype=np.float64),
                            np.asarray(hits[at], dtype=np.float64), clusters=theorems).diff
    ci = [round(100 * diff[0], 1), round(100 * diff[1], 1)]
    kept, why = choose_within_noise(setting_name(grid[at]), setting_name(grid[best]), ci)
    return {"best": grid[best], "shipped": grid[at], "best_minus_shipped_ci": ci, "why": why,
            "kept": grid[best] if kept == setting_name(grid[best]) else grid[at]}


def _temp(t: float | None) -> str:
    return "raw scores" if t is None else f"{t:g}"


def top_of(scores: dict[str, float], own: list[str], near: list[tuple[str, float]],
           temperature: float | None, weight: float, n: int = N) -> list[str]:
    """The n best of the model's own candidates and the neighbours' tactics, by the mixture
    log((1 - weight) P_model + weight P_neighbours)."""
    dist = vote(near, temperature)
    cands = list(dict.fromkeys(own + list(dist)))
    mixed = {t: mix(scores[t], dist.get(t, 0.0), weight) for t in cands}
    return sorted(cands, key=lambda t: -mixed[t])[:n]


def hit(gold: str, proposed: list[str]) -> int:
    return int(normalize_tactic(gold) in {normalize_tactic(t) for t in proposed})


def markdown(result: dict) -> str:
    if result.get("rule"):  # a run on a split of its own (select), intervals over theorems
        which = f"{result['n_examples']} real tactics, every traced tactic of {result['split']}. Model "
        over = "theorems (a theorem's tactics together)"
    else:  # the committed run on real val less the generator benchmark's subset
        which = (f"{result['n_examples']} real tactics: those the generator benchmark does not score (its "
                 f"{result['benchmark_examples']} are a seeded subset, seed {result['config']['seed']}). Model ")
        over = "tactics"
    lines = [f"# Tactic neighbours: choosing k, temperature and weight on {result['dataset']} {result['split']}", "",
             which + f"`{result['model']}`, no premises; candidates: beam {N}, the model's pool of {result['pool_size']}, "
             f"and the tactics of the k nearest training states. EM@{N}, 95% bootstrap intervals "
             f"(2000 resamples of the {over}, seed 0).", "",
             "| row | EM@8 (%) |", "|---|---|"]
    for r in result["baselines"]:
        lines.append(f"| {r['row']} | {100 * r['em']:.1f} [{100 * r['ci'][0]:.1f}, {100 * r['ci'][1]:.1f}] |")
    c = result["chosen"]
    lines += ["", f"Chosen: {setting_name(c)} "
              f"(EM@8 {100 * c['em']:.1f}); the {len(result['grid'])} settings: "
              f"{100 * min(g['em'] for g in result['grid']):.1f} to {100 * max(g['em'] for g in result['grid']):.1f}.",
              "", "| k | temperature | " + " | ".join(f"weight {w}" for w in WEIGHTS) + " |",
              "|---|---|" + "---|" * len(WEIGHTS)]
    for k, temp in itertools.product(KS, TEMPERATURES):
        row = [g for g in result["grid"] if g["k"] == k and g["temperature"] == temp]
        lines.append(f"| {k} | {_temp(temp)} | " + " | ".join(f"{100 * g['em']:.1f}" for g in row) + " |")
    if result.get("rule"):
        r = result["rule"]
        against = "shipped" if "best_minus_shipped_ci" in r else "simplest"  # issue 52's run: the simplest
        ci = r[f"best_minus_{against}_ci"]
        lines += ["", f"The rule for a close call (DEVELOPING.md): best ({setting_name(r['best'])}) − {against} "
                  f"({setting_name(r[against])}), paired over theorems: [{ci[0]:+.1f}, "
                  f"{ci[1]:+.1f}] points. {r['why']}. Shipped: {setting_name(r['kept'])}."]
    lines += ["", "Temperature: each neighbour's vote is a softmax of its BM25 score at that temperature; "
              "raw scores: proportional to the score. The frequency row proposes the pool's first 8 "
              "(the most frequent training targets) for every state.", "",
              f"Machine: {result['machine'].get('cpu', '')} ({result['machine'].get('cpu_count')} cores). "
              f"Commit {result['git_commit']}. {result['seconds']} s.", f"Command: `{result['command']}`"]
    lines += corrections_markdown(result)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/generator/benchmark_real.yaml")
    p.add_argument("--select-split", default="leandojo-real/select",
                   help="the split whose tactics settings are chosen on; none: the config's split less "
                        "the tactics its benchmark scores (how the committed results were made)")
    add_allow_dirty(p)
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)
    setup_logging()
    t0 = time.perf_counter()
    cfg = load_config(GeneratorBenchmarkConfig, args.config, args.overrides)
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()
    if args.select_split != "none":
        cfg.data.split = args.select_split
        examples = eval_examples(ds.theorems(args.select_split), corpus, 0)
        scored: set[str] = set()
    else:
        theorems = ds.theorems(cfg.data.split)
        scored = {e.key for e in eval_examples(theorems, corpus, cfg.max_examples, cfg.seed)}
        examples = [e for e in eval_examples(theorems, corpus, 0) if e.key not in scored]
    gen = TacticGenerator.load(cfg.model)
    nearest, pool = gen.neighbors, gen.pool
    if nearest is None:
        raise SystemExit(f"error: the model in {cfg.model} has no tactic neighbours (prover generator neighbors)")
    gen.neighbors, gen.pool = None, []
    ic = gen.input_cfg
    per: list[tuple[str, dict[str, float], list[tuple[str, float]], list[str]]] = []
    for ex in progress_bar(examples, desc="score candidates", unit="tactic"):
        text = format_input(ex.state, [], ic.max_bytes, ic.premise_text, ic.max_state_bytes)[0]
        beam = [s.tactic for s in gen.generate([text], num_tactics=N, batch_size=1)[0]]
        near = nearest.nearest(ex.state, max(KS))
        own = list(dict.fromkeys(beam + pool))
        every = list(dict.fromkeys(own + [t for t, _ in near]))
        scores = dict(zip(every, gen.score_candidates([text], [every])[0]))
        per.append((ex.tactic, scores, near, own))

    def em(hits: list[int]) -> dict:
        v = np.asarray(hits, dtype=np.float64)
        theorems = [e.key.rsplit("#", 1)[0] for e in examples]  # intervals resample theorems
        return {"em": round(float(v.mean()), 6), "ci": [round(x, 6) for x in mean_interval(v, clusters=theorems)]}

    grid, grid_hits = [], []
    for k, temp, w in itertools.product(KS, TEMPERATURES, WEIGHTS):
        hits = [hit(gold, top_of(s, own, near[:k], temp, w)) for gold, s, near, own in per]
        grid.append({"k": k, "temperature": temp, "weight": w, **em(hits)})
        grid_hits.append(hits)
    simplest_hits = [hit(gold, list(vote(near[:SIMPLEST["k"]], SIMPLEST["temperature"]))[:N]) for gold, _, near, _ in per]
    rule = choose(grid, grid_hits, shipped_setting(), [e.key.rsplit("#", 1)[0] for e in examples])
    chosen = rule["kept"]
    model_alone = [hit(gold, sorted(own, key=lambda t: -s[t])[:N]) for gold, s, _, own in per]
    neighbours_alone = [hit(gold, list(vote(near[:chosen["k"]], chosen["temperature"]))[:N]) for gold, _, near, _ in per]
    frequency = [hit(gold, pool[:N]) for gold, *_ in per]
    command = " ".join(["python benchmarks/generator_neighbors_selection.py", "--config", args.config, *args.overrides])
    result = {"benchmark": "generator_neighbors_selection", "command": command, "config": to_plain(cfg),
              "git_commit": commit, "machine": machine(), "dataset": ds.name, "split": cfg.data.split,
              "model": cfg.model, "model_training": model_training(cfg.model), "pool_size": len(pool), "n_examples": len(per), "benchmark_examples": len(scored),
              "baselines": [{"row": "model alone (beam and pool)", **em(model_alone)},
                            {"row": f"neighbours alone (k {chosen['k']}, temperature {_temp(chosen['temperature'])})",
                             **em(neighbours_alone)},
                            {"row": f"the simplest setting ({setting_name(SIMPLEST)}: the neighbours alone)",
                             **em(simplest_hits)},
                            {"row": "frequency (no model)", **em(frequency)},
                            {"row": "chosen mixture", "em": chosen["em"], "ci": chosen["ci"]}],
              "grid": grid, "rule": rule, "chosen": chosen, "seconds": round(time.perf_counter() - t0, 1)}
    out = Path(cfg.results_dir)
    # Not generator-*: that name is for the generator benchmark's own result files.
    stem = f"tactic-neighbors-selection-{ds.name}-{cfg.data.split.replace('/', '-')}"
    # Each tactic's outcome under every setting and baseline: what a paired interval between any
    # two of them needs (issue 62).
    result["per_query"] = write_per_query(out / stem, [
        {"tactic": e.key, "theorem": e.key.rsplit("#", 1)[0], "grid": [h[i] for h in grid_hits],
         "model_alone": model_alone[i], "neighbours_alone": neighbours_alone[i], "simplest": simplest_hits[i],
         "frequency": frequency[i]} for i, e in enumerate(examples)])
    write_results(out / stem, result, markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
