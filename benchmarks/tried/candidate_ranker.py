"""A learned candidate ranker for the generator (generator/tried/rerank.py): fitted, chosen, reported.

    # 1. the generator's candidates, with their evidence, per state (resumable, per split and premises):
    python benchmarks/tried/candidate_ranker.py dump --split random/val --premises none fusion --max-examples 1000
    python benchmarks/tried/candidate_ranker.py dump --split leandojo-real/select --premises none gold fusion
    # 2. rankers fitted on random/val (tactic-level steps), each setting scored on select:
    python benchmarks/tried/candidate_ranker.py select
    # 3. the chosen setting, fitted again the same way, scored once on report:
    python benchmarks/tried/candidate_ranker.py report --setting <name>

The candidates are the shipped generator's (beam 8, tactic pool, tactic neighbours), plus the
neighbours' one-premise tactics filled with the top 3 premises shown (generator/tried/instantiate.py),
so one dump serves every ordering compared: the neighbours alone (their vote), the hand-set
mixture as shipped (without the instantiated candidates), the mixture with them and a 3-nat
premise bonus (the best hand-set lever, chosen earlier on select), and the rankers. Rankers are
fitted on mathlib-src random/val split into tactic-level steps (the generator's own training
granularity; theorems of leandojo-real/val left out), never on the split they are scored on.
EM@8 intervals resample theorems. Writes benchmarks/results/candidate-ranker-<split>.{json,md}.
"""
from __future__ import annotations

import gzip
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

from generator.candidate import Candidate
from generator.evaluate import condition_premises, eval_examples
from generator.inputs import normalize_tactic
from generator.model import TacticGenerator
from generator.tried.instantiate import plug_in
from generator.tried.rerank import CandidateRanker, RankerConfig
from generator.settings import GeneratorBenchmarkConfig
from prover.benchmarking.candidate_dumps import CONFIG, dump_path, read_dump
from prover.benchmarking.harness import (N_RESAMPLES, SEED, add_allow_dirty, corrections_markdown, load_config, machine,
                                         mean_interval, model_training, paired_intervals, parser, require_clean_tree,
                                         to_plain, write_and_print)
from prover.data.dataset import Dataset
from prover.data.tactic_steps import tactic_level
from prover.utils.logs import setup_logging
from prover.utils.progress import progress_bar
from retriever.registry import build_retriever

log = logging.getLogger("benchmark.candidate_ranker")

FIT_SPLIT = "random/val"
INSTANTIATE = 3
BONUS = 3.0
N = 8
# The settings tried on select (recorded whatever wins): tree count and leaf size, the two
# that decide how far a ranker fitted on ~100 positive states can bend the hand-set order.
SETTINGS = {
    "small": RankerConfig(num_trees=100, num_leaves=7, min_data_in_leaf=50),
    "base": RankerConfig(),
    "large": RankerConfig(num_trees=400, num_leaves=31, min_data_in_leaf=20),
}


def _rewrite(path: Path, rows: list[dict]) -> None:
    """Only whole rows kept, so appending after an interruption leaves a readable file."""
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)


def candidates_of(row: dict) -> list[Candidate]:
    return [Candidate(t, lp, nb, bool(beam), pool, bool(inst), pr) for t, lp, nb, beam, pool, inst, pr in row["cands"]]


def examples_for(ds: Dataset, split: str, max_examples: int, seed: int):
    theorems = ds.theorems(split)
    if split == FIT_SPLIT:
        real = {t.full_name for t in ds.theorems("leandojo-real/val")}
        theorems, _ = tactic_level([t for t in theorems if t.full_name not in real], 64)
    return eval_examples(theorems, ds.corpus(), max_examples, seed)


def dump(args, cfg) -> None:
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
    corpus = ds.corpus()
    examples = examples_for(ds, args.split, args.max_examples, cfg.seed)
    gen = plug_in(TacticGenerator.load(cfg.model), INSTANTIATE)
    gen.neighbors.exclude({f"{e.file_path}::{e.theorem}" for e in examples})
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for cond in args.premises:
        path = dump_path(run_dir, args.split, cond)
        rows = read_dump(path)
        if path.exists():
            _rewrite(path, rows)
        done = {r["key"] for r in rows}
        todo = [e for e in examples if e.key not in done]
        log.info("%s %s: %d states, %d done", args.split, cond, len(examples), len(done))
        if not todo:
            continue
        retriever = build_retriever(cond, corpus, cfg) if cond not in ("none", "gold") else None
        premises = condition_premises(cond, todo, corpus, retriever, cfg.k)
        with gzip.open(path, "at", encoding="utf-8") as f:
            for lo in progress_bar(range(0, len(todo), cfg.batch_size), desc=f"candidates ({cond})", unit="batch"):
                chunk, ps = todo[lo: lo + cfg.batch_size], premises[lo: lo + cfg.batch_size]
                inputs, names = [], []
                for ex, p in zip(chunk, ps):
                    text, kept = gen.input_text(ex.state, p)
                    inputs.append(text)
                    names.append([q.full_name for q in p[:kept]])
                got = gen.candidates(inputs, N, batch_size=cfg.batch_size, states=[e.state for e in chunk],
                                     premises=names)
                for ex, cands in zip(chunk, got):
                    f.write(json.dumps({"key": ex.key, "gold": ex.tactic, "cands": [
                        [c.tactic, round(c.model_logprob, 4), c.neighbour_prob, int(c.in_beam), c.pool_rank,
                         int(c.instantiated), c.premise_rank] for c in cands]}, ensure_ascii=False) + "\n")
                f.flush()


def hits(rows: list[dict], order) -> np.ndarray:
    """1 where the recorded tactic is among the top N candidates by `order` (scores, higher first)."""
    out = []
    for row in rows:
        cands = candidates_of(row)
        keep = [c for c, s in sorted(zip(cands, order(cands)), key=lambda cs: -cs[1]) if s > -np.inf][:N]
        gold = normalize_tactic(row["gold"])
        out.append(int(any(normalize_tactic(c.tactic) == gold for c in keep)))
    return np.asarray(out, dtype=np.float64)


def orderings(gen_weight: float, ranker: CandidateRanker | None) -> dict:
    """Each ordering compared, as a function from a state's candidates to their scores."""
    from generator.neighbors import mix

    def neighbours(cs):
        return [c.neighbour_prob if c.neighbour_prob else -np.inf for c in cs]

    def shipped(cs):  # the mixture over what the shipped generator proposes (no instantiation)
        return [mix(c.model_logprob, c.neighbour_prob or 0.0, gen_weight)
                if (c.in_beam or c.pool_rank >= 0 or (c.neighbour_prob or 0) > 0) else -np.inf for c in cs]

    def levers(cs):
        return [mix(c.model_logprob, c.neighbour_prob or 0.0, gen_weight) + BONUS * (c.premise_rank >= 0) for c in cs]

    out = {"neighbours alone": neighbours, "mixture (shipped)": shipped, "mixture + inst3 + bonus 3": levers}
    if ranker is not None:
        out["ranker"] = lambda cs: list(ranker.scores(cs))
    return out


def fit(run_dir: Path, setting: RankerConfig, weight: float) -> CandidateRanker:
    groups, golds = [], []
    for cond in ("none", "fusion"):
        rows = read_dump(dump_path(run_dir, FIT_SPLIT, cond))
        if not rows:
            raise SystemExit(f"no candidates dumped for {FIT_SPLIT} with {cond} premises: run the dump stage")
        groups += [candidates_of(r) for r in rows]
        golds += [r["gold"] for r in rows]
    return CandidateRanker.fit(groups, golds, weight, setting, {"split": FIT_SPLIT, "premises": ["none", "fusion"]})


def score(args, cfg, split: str, settings: dict[str, RankerConfig], commit: str) -> dict:
    run_dir = Path(args.run_dir)
    gen = TacticGenerator.load(cfg.model)
    weight = gen.neighbors.cfg.weight
    result = {"benchmark": "candidate_ranker", "split": split, "fit_split": FIT_SPLIT, "git_commit": commit,
              "command": "python benchmarks/tried/candidate_ranker.py " + " ".join(sys.argv[1:]),
              "config": to_plain(cfg), "machine": machine(), "model": cfg.model, "model_training": model_training(cfg.model),
              "bootstrap": {"resamples": N_RESAMPLES, "seed": SEED, "paired_over": "theorems"},
              "settings": {}, "rows": [], "comparisons": []}
    per: dict[str, np.ndarray] = {}
    keys = None
    for name, setting in settings.items():
        t0 = time.process_time()
        ranker = fit(run_dir, setting, weight)
        result["settings"][name] = {**vars(setting), **ranker.fitted_on,
                                    "fit_cpu_s": round(time.process_time() - t0, 1)}
        for cond in args.premises:
            rows = read_dump(dump_path(run_dir, split, cond))
            if not rows:
                raise SystemExit(f"no candidates dumped for {split} with {cond} premises: run the dump stage")
            keys = keys or [r["key"] for r in rows]
            if [r["key"] for r in rows] != keys:
                raise SystemExit(f"{split} {cond}: not the same states as the other dumps (rerun the dump)")
            found = np.asarray([int(normalize_tactic(r["gold"]) in {normalize_tactic(c[0]) for c in r["cands"]})
                                for r in rows], dtype=np.float64)
            per[f"any candidate | {cond}"] = found
            for label, order in orderings(weight, ranker).items():
                name_ = f"{label}{'' if label != 'ranker' else ' ' + name} | {cond}"
                if name_ not in per:
                    per[name_] = hits(rows, order)
    clusters = [k.rsplit("#", 1)[0] for k in keys]
    for name_, v in per.items():
        lo, hi = mean_interval(v, clusters=clusters)
        result["rows"].append({"row": name_, "em@8": round(float(v.mean()), 6), "ci": [round(lo, 6), round(hi, 6)]})
    conds = args.premises

    def cmp(a: str, b: str) -> None:
        if a in per and b in per:
            lo, hi = paired_intervals(per[a], per[b], clusters=clusters).diff
            result["comparisons"].append({"a": a, "b": b, "diff": round(float((per[a] - per[b]).mean()), 6),
                                          "ci": [round(lo, 6), round(hi, 6)]})
    for name in settings:
        r = f"ranker {name}"
        for cond in conds:
            cmp(f"{r} | {cond}", f"mixture (shipped) | {cond}")
            cmp(f"{r} | {cond}", f"neighbours alone | {cond}")
        for cond in conds:
            if cond != "none":
                cmp(f"{r} | {cond}", f"{r} | none")
    for cond in conds:
        if cond != "none":
            cmp(f"mixture + inst3 + bonus 3 | {cond}", "mixture (shipped) | none")
    result["n_states"] = len(keys)
    result["n_theorems"] = len(set(clusters))
    return result


def markdown(r: dict) -> str:
    lines = [f"# Candidate ranker: mathlib-src {r['split']}", "",
             f"Generator `{r['model']}`; its candidates (beam 8, tactic pool, tactic neighbours, the neighbours' "
             f"one-premise tactics filled with the top {INSTANTIATE} premises shown) for {r['n_states']} tactics of "
             f"{r['n_theorems']} theorems. Rankers (generator/rerank.py, LambdaMART) fitted on {r['fit_split']} "
             "tactic-level steps with none and fusion premises; never on this split.", "",
             "EM@8 (%), 95% intervals resampling theorems, by the premises shown:", ""]
    conds = list(dict.fromkeys(x["row"].split(" | ")[1] for x in r["rows"]))
    cells: dict[str, dict[str, str]] = {}
    for x in r["rows"]:
        ordering, cond = x["row"].split(" | ")
        cells.setdefault(ordering, {})[cond] = f"{100 * x['em@8']:.1f} [{100 * x['ci'][0]:.1f}, {100 * x['ci'][1]:.1f}]"
    lines += ["| ordering | " + " | ".join(conds) + " |", "|---" * (len(conds) + 1) + "|"]
    lines += [f"| {o} | " + " | ".join(c.get(k, "") for k in conds) + " |" for o, c in cells.items()]
    lines += ["", "Paired differences at EM@8 (points; 95% bootstrap, "
              f"{r['bootstrap']['resamples']} resamples of the theorems, seed {r['bootstrap']['seed']}):", "",
              "| comparison | difference | 95% interval |", "|---|---|---|"]
    lines += [f"| {c['a'].replace(' | ', ', ')} − {c['b'].replace(' | ', ', ')} | {100 * c['diff']:+.1f} | [{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}] |"
              for c in r["comparisons"]]
    rankers = [k for k in cells if k.startswith("ranker ")]
    if rankers and r["split"].endswith("select"):
        em = {x["row"]: x["em@8"] for x in r["rows"]}
        best = max(rankers, key=lambda k: (em.get(f"{k} | fusion", 0.0), -rankers.index(k)))
        c = next(c for c in r["comparisons"] if c["a"] == f"{best} | fusion" and c["b"] == "mixture (shipped) | fusion")
        ship = c["ci"][0] > 0
        lines += ["", f"Chosen on select by the fusion column (the premises search shows): **{best}**, "
                  f"{100 * c['diff']:+.1f} [{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}] points over the shipped "
                  "mixture. " + ("Its interval is above zero: scored on report." if ship else
                                 "A gain inside its noise is not a gain: not shipped, and report is not scored.")]
    lines += ["", "any candidate: the recorded tactic is among all candidates (the ceiling of any ordering). "
              "mixture (shipped): the generator's hand-set score over the candidates it proposes without "
              f"instantiation; + inst{INSTANTIATE} + bonus {BONUS:g}: with the instantiated candidates and {BONUS:g} nats "
              "for naming a premise shown. Settings: " + "; ".join(
                  f"{k}: {v['num_trees']} trees, {v['num_leaves']} leaves, min leaf {v['min_data_in_leaf']}, fitted on "
                  f"{v['states']} states with the recorded tactic among their candidates ({v['fit_cpu_s']} CPU-s)"
                  for k, v in r["settings"].items()) + ".", "",
              f"Machine: {r['machine'].get('cpu', '')} ({r['machine'].get('cpu_count')} cores). Commit {r['git_commit']}.",
              f"Command: `{r['command']}`"]
    lines += corrections_markdown(r)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("stage", choices=["dump", "select", "report"])
    p.add_argument("--config", default=CONFIG)
    p.add_argument("--split", default="leandojo-real/select", help="dump: the split whose states are dumped")
    p.add_argument("--premises", nargs="+", default=["none", "fusion"])
    p.add_argument("--max-examples", type=int, default=0)
    p.add_argument("--setting", default=None, help="report: the setting chosen on select")
    p.add_argument("--run-dir", default="runs/candidate-ranker")
    p.add_argument("--results-dir", default="benchmarks/results")
    add_allow_dirty(p)
    p.add_argument("overrides", nargs="*")
    p.add_argument("--render", default=None, help="only rewrite the Markdown of this results JSON")
    args = p.parse_intermixed_args(argv)
    if args.render:  # a rendering change: the numbers come from the JSON, nothing is recomputed
        path = Path(args.render)
        path.with_suffix(".md").write_text(markdown(json.loads(path.read_text())))
        return 0
    commit = require_clean_tree(args.allow_dirty)
    setup_logging()
    cfg = load_config(GeneratorBenchmarkConfig, args.config, args.overrides)
    if args.stage == "dump":
        dump(args, cfg)
        return 0
    split = "leandojo-real/select" if args.stage == "select" else "leandojo-real/report"
    if args.stage == "report" and args.setting not in SETTINGS:
        raise SystemExit(f"report needs --setting, one of {list(SETTINGS)} (chosen on select)")
    settings = SETTINGS if args.stage == "select" else {args.setting: SETTINGS[args.setting]}
    result = score(args, cfg, split, settings, commit)
    write_and_print(Path(args.results_dir) / f"candidate-ranker-mathlib-src-{split.replace('/', '-')}", result, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
