"""The training runs behind cfr-negatives-mathlib-src.md, and what CFR's `cfr.pairs` modes give.

Reads each run's own summary.json (the MLM encoder and the CFRs trained from it) and counts
the training pairs of mathlib-src random/train under `cfr.pairs` = statement, steps and
exact-steps (retriever/training/train_cfr.py's `training_theorems`).

    python benchmarks/cfr_runs.py --pretrain runs/retriever-cpu \\
        --cfr uniform=runs/retriever-cpu-uni --cfr hard-bm25=runs/retriever-cpu-hn \\
        --cfr steps-hard-bm25=runs/retriever-cpu-steps
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from prover.benchmarking.harness import command_line, git_commit, machine, parser, write_results
from prover.data.dataset import Dataset
from prover.data.pairs import state_premise_pairs
from retriever.training.train_cfr import PAIRS, training_theorems

KEEP = ("steps", "cpu_seconds", "seconds", "done", "eval_loss_init", "eval_loss", "train_loss", "pairs",
        "workers", "device")


def pair_counts(root: str) -> dict:
    ds = Dataset(root)
    corpus = ds.corpus()
    theorems = list(ds.theorems("random/train"))
    sets = {}
    for mode in PAIRS:
        pairs, _ = state_premise_pairs(training_theorems(theorems, mode), corpus)
        sets[mode] = {(p.theorem, p.state): set(p.premises) for p in pairs}
    s, steps, exact = sets["statement"], sets["steps"], sets["exact-steps"]
    out = {m: {"pairs": len(v), "premise_links": sum(len(x) for x in v.values())} for m, v in sets.items()}
    out["steps"]["states_not_in_statement"] = len(steps.keys() - s.keys())
    out["exact-steps"]["pairs_with_fewer_premises"] = sum(exact[k] < s[k] for k in exact.keys() & s.keys())
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--data", default=os.environ.get("PROVER_DATA", "../shared/data") + "/mathlib-src")
    ap.add_argument("--pretrain", required=True, help="run_dir of the MLM encoder")
    ap.add_argument("--cfr", action="append", required=True, help="NAME=RUN_DIR of a conventional CFR")
    args = ap.parse_args()
    t0 = time.perf_counter()
    runs = {"pretrain": {k: v for k, v in json.loads((Path(args.pretrain) / "pretrain/summary.json").read_text()).items()
                         if k in KEEP}}
    for spec in args.cfr:
        name, run_dir = spec.split("=", 1)
        summary = json.loads((Path(run_dir) / "cfr-conventional/summary.json").read_text())
        runs[f"cfr {name}"] = {k: v for k, v in summary.items() if k in KEEP}
    res = {"benchmark": "cfr-runs", "command": command_line(), "git_commit": git_commit(),
           "machine": machine(), "runs": runs, "pairs": pair_counts(args.data),
           "trained_at": "pretrain: the engine of e5129c6 (started from its working tree just before that commit); "
                         "CFRs: 66640dc, with configs/retriever/cpu.yaml and cfr.similarity=conventional "
                         "cfr.init=<pretrain>/model cfr.eval_every=-1 [cfr.hard_negatives=bm25], one thread each; "
                         "steps-hard-bm25: fe7ad04 (its CFR code is that of a4a84be), with configs/retriever/cpu.yaml "
                         "(which then held eval_every -1 and hard_negatives bm25) and cfr.similarity=conventional "
                         "cfr.init=<pretrain>/model cfr.pairs=steps, one thread, beside a generator training",
           "seconds": round(time.perf_counter() - t0, 1)}
    stem = Path("benchmarks/results/cfr-runs-mathlib-src")
    L = ["# The CFR runs of issue 28 and CFR's training pairs (mathlib-src random/train)", "",
         f"`{res['command']}` at commit {res['git_commit']}. Trained: {res['trained_at']}.", "",
         "| run | steps | CPU s | done | training pairs | held-out MLM loss (init → end) |", "|---|---|---|---|---|---|"]
    for name, r in runs.items():
        mlm = f"{r['eval_loss_init']:.2f} → {r['eval_loss']:.2f}" if "eval_loss" in r else ""
        L.append(f"| {name} | {r['steps']} | {r['cpu_seconds']} | {r['done']} | {r.get('pairs', '')} | {mlm} |")
    L += ["", "| cfr.pairs | pairs | premise links | states not in statement | pairs with fewer premises |",
          "|---|---|---|---|---|"]
    for mode, p in res["pairs"].items():
        L.append(f"| {mode} | {p['pairs']} | {p['premise_links']} | {p.get('states_not_in_statement', '')} | "
                 f"{p.get('pairs_with_fewer_premises', '')} |")
    write_results(stem, res, "\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
