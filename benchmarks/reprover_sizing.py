"""Size the ReProver-style encoder for the CPU budget: CPU-seconds per optimisation step.

    python benchmarks/reprover_sizing.py [--steps 6] [--cfr-steps 4992]

The comparison is fair only if the ReProver-style row gets at least as many optimisation steps
in its 45 CPU-minutes as CFR does in its own (4992 for conventional CFR at cpu.yaml: its
training record in results/retrieval-mathlib-src-random-test-cpu-cfrL.json). For each candidate
size this trains a few steps on real random/train batches (same method as
`prover retriever train-reprover`: bytes, mean pooling, MSE over in-batch candidates plus 3
negatives, one from the positive's file) on ONE CPU thread, as the pipeline runs every stage,
and projects the steps that 45 CPU-minutes buy. Writes benchmarks/results/reprover-sizing.{json,md}.
"""
from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from prover.benchmarking.harness import add_allow_dirty, machine, parser, require_clean_tree, write_results
from prover.data.dataset import Dataset
from prover.data.pairs import premise_queries
from prover.utils.logs import setup_logging
from retriever.models.reprover import ByteEncoder, premise_text, similarity_loss
from retriever.settings import ReProverConfig
from retriever.training.train_reprover import make_batch, training_examples

BUDGET_CPU_SECONDS = 45 * 60
# (d_model, d_ff, num_layers, num_heads, max_state_len, max_premise_len): cpu.yaml's earlier
# section first, then smaller encoders at byte lengths that cover what CFR reads (128 WordPiece
# tokens of state, 64 of premise: about 3.5 bytes a token on mathlib-src).
CANDIDATES = [
    (256, 1024, 4, 4, 768, 384),
    (128, 512, 4, 4, 512, 256),
    (128, 512, 2, 2, 512, 256),
    (64, 256, 2, 2, 512, 256),
    (64, 256, 1, 2, 512, 256),
    (64, 256, 2, 2, 384, 192),
    (64, 256, 1, 2, 384, 192),
    (32, 128, 2, 2, 512, 256),
    (64, 256, 2, 2, 256, 128),
]


def cpu_seconds_per_step(rc: ReProverConfig, batches: list, texts: list[str]) -> float:
    torch.manual_seed(0)
    encoder = ByteEncoder.fresh(rc)
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=rc.lr)
    times = []
    for i, (states, candidates, labels) in enumerate(batches):
        t0 = time.process_time()
        s = encoder(states, rc.max_state_len)
        p = encoder([texts[c] for c in candidates], rc.max_premise_len)
        loss = similarity_loss(s, p, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(encoder.parameters(), rc.grad_clip)
        optimizer.step()
        if i > 0:  # the first step pays one-off allocation costs
            times.append(time.process_time() - t0)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--data", default=str(Path(__import__("os").environ.get("PROVER_DATA", "../shared/data")) / "mathlib-src"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--cfr-steps", type=int, default=4992)
    ap.add_argument("--out", default="benchmarks/results")
    add_allow_dirty(ap)
    args = ap.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)
    setup_logging()
    torch.set_num_threads(1)
    ds = Dataset(args.data)
    corpus = ds.corpus()
    queries, _ = premise_queries(ds.theorems("random/train"), corpus, ds.skips)
    examples = training_examples(queries)
    order = np.random.default_rng(0).permutation(len(examples))
    texts = [premise_text(p) for p in corpus.premises]
    rows = []
    for d_model, d_ff, layers, heads, s_len, p_len in CANDIDATES:
        rc = replace(ReProverConfig(), d_model=d_model, d_ff=d_ff, num_layers=layers, num_heads=heads,
                     d_kv=d_model // heads, max_state_len=s_len, max_premise_len=p_len, batch_size=16)
        rng = np.random.default_rng(0)
        batches = [make_batch([examples[j] for j in order[i * 16:(i + 1) * 16]], queries, corpus, rc, rng)
                   for i in range(args.steps + 1)]
        per_step = cpu_seconds_per_step(rc, batches, texts)
        params = sum(p.numel() for p in ByteEncoder.fresh(rc).parameters())
        steps = int(BUDGET_CPU_SECONDS / per_step)
        rows.append({"d_model": d_model, "d_ff": d_ff, "num_layers": layers, "num_heads": heads,
                     "max_state_len": s_len, "max_premise_len": p_len, "batch_size": 16,
                     "parameters": params, "cpu_seconds_per_step": round(per_step, 3),
                     "steps_in_45_cpu_min": steps, "ge_cfr_steps": steps >= args.cfr_steps})
        print(rows[-1], flush=True)
    out = Path(args.out)
    result = {
        "benchmark": "reprover-sizing", "git_commit": commit, "machine": machine(),
        "command": "python benchmarks/reprover_sizing.py " + " ".join(argv or sys.argv[1:]),
        "threads": 1, "timed_steps_per_size": args.steps, "cfr_steps": args.cfr_steps, "rows": rows}
    lines = ["# ReProver-style encoder sizes: CPU-seconds per step (one thread, batch 16, 3 negatives)", "",
             f"CFR (conventional, cpu.yaml) takes {args.cfr_steps} steps in 45 CPU-minutes. Median of "
             f"{args.steps} timed steps per size on real random/train batches. Commit `{commit}`.", "",
             "| d_model | d_ff | layers | heads | state/premise bytes | params | CPU-s/step | steps in 45 CPU-min | ≥ CFR |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['d_model']} | {r['d_ff']} | {r['num_layers']} | {r['num_heads']} | "
                     f"{r['max_state_len']}/{r['max_premise_len']} | {r['parameters'] / 1e6:.2f}M | "
                     f"{r['cpu_seconds_per_step']:.2f} | {r['steps_in_45_cpu_min']} | {'yes' if r['ge_cfr_steps'] else 'no'} |")
    write_results(out / "reprover-sizing", result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
