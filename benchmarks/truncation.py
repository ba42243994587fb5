"""How often a retriever's length limits cut away the goal of a proof state.

    python benchmarks/truncation.py --tokenizer <run_dir>/tokenizer --split random/val

For every scored query of the split: is the formatted state longer than CFR's `max_state_len`,
and for each (state, gold premise) pair, does CAR's `[CLS] state [SEP] premise [SEP]` input,
cut as `car.truncation_side` says, still hold the `<GOAL>` token? Counts both sides ("right",
Hugging Face's default, and "left"). Writes benchmarks/results/truncation-<dataset>-<split>.{json,md}.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from prover.benchmarking.harness import git_commit, machine, parser, write_results
from prover.data.dataset import Dataset
from prover.data.pairs import premise_queries
from prover.data.premise import GOAL_TOKEN
from prover.utils.progress import progress_bar
from retriever.models.car import truncate_pair
from retriever.models.text import format_state, premise_text
from retriever.models.tokenizer import load_tokenizer

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--tokenizer", required=True, help="a trained tokenizer folder (<run_dir>/tokenizer)")
    p.add_argument("--data", default=str(Path(os.environ.get("PROVER_DATA", REPO.parent / "shared/data")) / "mathlib-src"))
    p.add_argument("--split", default="random/val")
    p.add_argument("--max-state-len", type=int, default=128, help="CFR's (cpu.yaml: 128)")
    p.add_argument("--car-max-len", type=int, default=128, help="CAR's (cpu.yaml: 128)")
    p.add_argument("--results-dir", default=str(REPO / "benchmarks/results"))
    args = p.parse_args(argv)
    tok = load_tokenizer(args.tokenizer)
    goal = tok.convert_tokens_to_ids(GOAL_TOKEN)
    ds = Dataset(args.data)
    corpus = ds.corpus()
    queries, _ = premise_queries(ds.theorems(args.split), corpus, ds.skips)
    long_states, pairs = 0, 0
    goal_lost = {"right": 0, "left": 0}
    for q in progress_bar(queries, desc="measure truncation", unit="query"):
        state = tok(format_state(q.state), add_special_tokens=False)["input_ids"]
        long_states += len(state) + 2 > args.max_state_len  # + [CLS] and [SEP]
        for i in q.gold:
            premise = tok(premise_text(corpus.premises[i]), add_special_tokens=False)["input_ids"]
            pairs += 1
            for side in goal_lost:
                kept, _ = truncate_pair(state, premise, args.car_max_len - 3, side)
                goal_lost[side] += goal not in kept
    result = {"benchmark": "truncation", "dataset": ds.name, "split": args.split, "tokenizer": args.tokenizer,
              "max_state_len": args.max_state_len, "car_max_len": args.car_max_len, "queries": len(queries),
              "states_longer_than_max_state_len": long_states, "gold_pairs": pairs,
              "car_pairs_goal_lost": goal_lost,
              "command": " ".join(["python benchmarks/truncation.py", *(argv if argv is not None else sys.argv[1:])]),
              "git_commit": git_commit(), "machine": machine()}
    md = (f"## Goals cut away by length limits: {ds.name} {args.split}\n\n"
          f"- CFR, `max_state_len` {args.max_state_len}: {long_states} of {len(queries)} states are longer "
          f"({100 * long_states / len(queries):.1f}%); cut on the right, each loses its end, where the goal is.\n"
          + "".join(f"- CAR, `max_len` {args.car_max_len}, state cut on the {side}: the goal is gone from "
                    f"{n} of {pairs} gold (state, premise) pairs ({100 * n / pairs:.1f}%).\n"
                    for side, n in goal_lost.items())
          + f"\nTokenizer `{args.tokenizer}`. Commit {result['git_commit']}.\nCommand: `{result['command']}`\n")
    stem = Path(args.results_dir) / f"truncation-{ds.name}-{args.split.replace('/', '-')}"
    write_results(stem, result, md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
