"""The learned structure scorer (issue 50): node embeddings trained contrastively, late interaction
over the fusion's top 100, alone and as a fusion member, on real states.

    python benchmarks/structure_late_interaction.py --split leandojo-real/select [--cpu-minutes 12]

Trains retriever/structure/encoder.py's NodeEncoder on state–premise pairs of random/train
(statement level: a theorem's initial goal and a premise its proof uses; in-batch negatives,
InfoNCE) on the CPU until its CPU-time budget, then re-ranks the top 100 of the fusion without
CFR (the members structure_retrieval.py measured, fitted on random/val) by late interaction,
and fits the fusion again with that ranking as a member. Scored on `--split` with intervals
that resample theorems; on select, the rule for close calls decides. Reads the member rankings
structure_retrieval.py cached (run it first). Writes
benchmarks/results/structure-late-interaction-<dataset>-<split>.{json,md}.
"""
from __future__ import annotations

import logging
import pickle
import random
import sys
import time
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import (add_allow_dirty, choose_within_noise, command_line, git_commit,
                                         load_config, machine, mean_interval, paired_intervals, parser,
                                         require_clean_tree, to_plain, write_results)
from prover.data.errors import UserInputError
from prover.utils.logs import setup_logging
from retriever.settings import RetrieverTrainConfig

log = logging.getLogger("structure_late_interaction")
FIT = "random/val"
MEMBER = "structure-li"
HEAD = "fusion-head"
Q_NODES, P_NODES = 48, 64


def _pairs(ds, n: int, seed: int) -> list[tuple[str, int]]:
    from prover.data.pairs import premise_queries
    rng = random.Random(seed)
    theorems = ds.theorems("random/train")
    theorems = rng.sample(theorems, min(len(theorems), n))
    queries = premise_queries(theorems, ds.corpus(), ds.skips)[0]
    return [(q.state, rng.choice(sorted(q.gold))) for q in queries]


class Scorer:
    """The trained encoder with its vocabulary, and premise contexts parsed once."""

    def __init__(self, corpus, vocab, model) -> None:
        self.corpus, self.vocab, self.model = corpus, vocab, model
        self.premises: dict[int, list] = {}

    def premise(self, i: int) -> list:
        from retriever.structure.encoder import node_contexts
        from retriever.structure.optree import statement_trees
        if i not in self.premises:
            p = self.corpus.premises[i]
            self.premises[i] = node_contexts(statement_trees(p.args, p.goal), False, P_NODES)
        return self.premises[i]

    @staticmethod
    def state(text: str) -> list:
        from retriever.structure.encoder import node_contexts
        from retriever.structure.optree import state_trees
        return node_contexts(state_trees(text), True, Q_NODES)

    def encode(self, contexts: list, max_nodes: int):
        from retriever.structure.encoder import tensors
        return self.model(*tensors(contexts, self.vocab, max_nodes))

    def rerank(self, state: str, candidates: list[int]) -> list[int]:
        import torch
        from retriever.structure.encoder import late_interaction
        if not candidates:
            return []
        with torch.no_grad():
            q, qm = self.encode([self.state(state)], Q_NODES)
            p, pm = self.encode([self.premise(c) for c in candidates], P_NODES)
            s = late_interaction(q, qm, p, pm)[0].numpy()
        return [candidates[j] for j in np.argsort(-s, kind="stable")]


def train(ds, n_theorems: int, cpu_minutes: float, seed: int, batch: int = 64) -> tuple[Scorer, dict]:
    import torch
    from retriever.structure.encoder import NodeEncoder, Vocab, late_interaction
    torch.manual_seed(seed)
    pairs = _pairs(ds, n_theorems, seed)
    probe = Scorer(ds.corpus(), None, None)
    states = [Scorer.state(s) for s, _ in pairs]
    labels = [lab for ctx in states for up, kids in ctx for lab in up + kids]
    labels += [lab for _, p in pairs for up, kids in probe.premise(p) for lab in up + kids]
    vocab = Vocab(labels, 20000)
    model = NodeEncoder(len(vocab))
    scorer = Scorer(ds.corpus(), vocab, model)
    scorer.premises = probe.premises
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    order = list(range(len(pairs)))
    rng = random.Random(seed)
    start, steps, losses = time.process_time(), 0, []
    while time.process_time() - start < 60 * cpu_minutes:
        rng.shuffle(order)
        for lo in range(0, len(order) - batch + 1, batch):
            idx = order[lo: lo + batch]
            prem = list(dict.fromkeys(pairs[i][1] for i in idx))  # in-batch negatives, each premise once
            q, qm = scorer.encode([states[i] for i in idx], Q_NODES)
            p, pm = scorer.encode([scorer.premise(c) for c in prem], P_NODES)
            target = torch.tensor([prem.index(pairs[i][1]) for i in idx])
            loss = torch.nn.functional.cross_entropy(late_interaction(q, qm, p, pm) / 0.05, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            losses.append(float(loss.detach()))
            if steps % 100 == 0:
                log.info("step %d loss %.3f (%.0f CPU-s)", steps, np.mean(losses[-100:]), time.process_time() - start)
            if time.process_time() - start >= 60 * cpu_minutes:
                break
    model.eval()
    return scorer, {"pairs": len(pairs), "steps": steps, "batch": batch, "cpu_seconds": round(time.process_time() - start),
                    "budget_cpu_minutes": cpu_minutes, "final_loss": round(float(np.mean(losses[-100:])), 3),
                    "vocab": len(vocab), "stopped_by": "budget"}


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/retriever/cpu.yaml")
    p.add_argument("--split", required=True)
    p.add_argument("--cpu-minutes", type=float, default=12.0)
    p.add_argument("--theorems", type=int, default=30000, help="random/train theorems the pairs come from")
    p.add_argument("overrides", nargs="*", help="config overrides, key=value")
    add_allow_dirty(p)
    args = p.parse_args(argv)
    setup_logging()
    require_clean_tree(args.allow_dirty)
    cfg = load_config(RetrieverTrainConfig, args.config, list(args.overrides))
    from prover.benchmarking.structure_members import cache_dir, fusion_rankings, per_query
    from prover.data.dataset import Dataset
    from retriever.registry import missing_training
    cache = cache_dir(cfg)
    paths = {s: cache / f"{s.replace('/', '-')}.pkl" for s in (FIT, args.split)}
    if not all(p.exists() for p in paths.values()):
        raise UserInputError(f"no cached member rankings under {cache}; run: python "
                             f"benchmarks/structure_retrieval.py --split {args.split}")
    data = {s: pickle.loads(p.read_bytes()) for s, p in paths.items()}
    base = [m for m in cfg.fusion.members if not missing_training(m, cfg)]
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    t0 = time.perf_counter()
    scorer, trained = train(ds, args.theorems, args.cpu_minutes, int(cfg.seed))
    from prover.data.pairs import premise_queries
    for split, d in data.items():
        queries = premise_queries(ds.theorems(split), ds.corpus(), ds.skips)[0]
        if [sorted(q.gold) for q in queries] != d["gold"]:
            raise ValueError(f"the cached rankings of {split} are of other queries: rerun structure_retrieval.py")
        heads = fusion_rankings(data[FIT], d, base, cfg)
        d["members"][MEMBER] = [scorer.rerank(q.state, h[:100]) for q, h in zip(queries, heads)]
        # the control: the same candidates in the fusion's own order, so that what a second
        # fusion gains from stacking on the first is not credited to the learned scorer
        d["members"][HEAD] = [h[:100] for h in heads]
        log.info("%s re-ranked %s", MEMBER, split)
    d = data[args.split]
    theorems = d["theorems"]
    ranked = {"fusion": fusion_rankings(data[FIT], d, base, cfg), MEMBER: d["members"][MEMBER],
              f"fusion+{MEMBER}": fusion_rankings(data[FIT], d, base + [MEMBER], cfg),
              f"fusion+{HEAD}": fusion_rankings(data[FIT], d, base + [HEAD], cfg)}
    metrics = {name: {m: np.array([per_query(r, g)[m] for r, g in zip(rs, d["gold"])])
                      for m in ("R@1", "R@10", "MRR")} for name, rs in ranked.items()}
    rows = []
    for name, ms in metrics.items():
        row = {"row": name}
        for m, v in ms.items():
            row[m] = round(float(v.mean()), 4)
            row[f"{m} 95% CI"] = [round(x, 4) for x in mean_interval(v, clusters=theorems)]
        rows.append(row)
    comparisons = []
    for b_row in ("fusion", f"fusion+{HEAD}"):
        for m in ("R@1", "R@10", "MRR"):
            a, b = metrics[f"fusion+{MEMBER}"][m], metrics[b_row][m]
            ci = paired_intervals(a, b, clusters=theorems).diff
            comparisons.append({"a": f"fusion+{MEMBER}", "b": b_row, "metric": m,
                                "diff": round(float(a.mean() - b.mean()), 4), "ci": [round(ci[0], 4), round(ci[1], 4)]})
    gain, over_control = comparisons[1], comparisons[4]
    best = f"fusion+{MEMBER}" if gain["diff"] > 0 else "fusion"
    kept, why = choose_within_noise("fusion", best, [100 * x for x in gain["ci"]])
    if kept != "fusion" and over_control["ci"][0] <= 0:
        kept = "fusion"
        why += (f"; but over the stacking control (fusion+{HEAD}) it is [{100 * over_control['ci'][0]:+.1f}, "
                f"{100 * over_control['ci'][1]:+.1f}]: the gain is the second fusion's, not the learned "
                f"scorer's, so fusion stays")
    result = {"benchmark": "structure-late-interaction", "command": command_line(), "config": to_plain(cfg),
              "git_commit": git_commit(), "machine": machine(), "seconds": round(time.perf_counter() - t0, 1),
              "split": args.split, "fitted_on": FIT, "n_queries": len(d["gold"]), "members": base,
              "trained": {MEMBER: trained}, "rows": rows, "comparisons": comparisons, "decision": why,
              "chosen_members": "+".join(base + ([MEMBER] if kept != "fusion" else []))}
    lines = [f"# Learned structure: late interaction over the fusion's top 100, {args.split} "
             f"({result['n_queries']} queries)", "",
             f"`{result['command']}` at commit {result['git_commit']}. NodeEncoder trained on {trained['pairs']} "
             f"random/train pairs for {trained['steps']} steps ({trained['cpu_seconds']} CPU-s, stopped by its "
             f"{args.cpu_minutes:g} CPU-minute budget; last loss {trained['final_loss']}). Fusions fitted on {FIT}; "
             f"members {', '.join(base)} (CFR untrained here, left out).", "",
             "| row | R@1 | R@10 | MRR |", "|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['row']} | " + " | ".join(
            f"{100 * row[m]:.1f} [{100 * row[m + ' 95% CI'][0]:.1f}, {100 * row[m + ' 95% CI'][1]:.1f}]"
            for m in ("R@1", "R@10", "MRR")) + " |")
    lines += ["", "| a − b | metric | difference, 95% interval (points) |", "|---|---|---|"]
    lines += [f"| {c['a']} − {c['b']} | {c['metric']} | {100 * c['diff']:+.1f} "
              f"[{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}] |" for c in comparisons]
    lines += ["", f"Decision (rule for close calls): {why}."]
    write_results(Path("benchmarks/results") / f"structure-late-interaction-{Path(cfg.data.root).name}-"
                  f"{args.split.replace('/', '-')}", result, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0

if __name__ == "__main__":
    sys.exit(main())
