"""The fitted fusion with and without a file context: R@10 on an evaluation split.

    python benchmarks/fusion_context.py --split leandojo-real/select [--config configs/retriever/cpu.yaml] [--run-dir DIR]

A served request without a `file_path` (the web page's default) gives `usage` and `locality`
no file to read: the fusion then keeps only what its members earned from the state (BM25,
CFR, the neighbours' votes; retriever/models/learned_fusion.py). This scores the fusion fitted
in the run (`prover retriever train-fusion`) on `--split` twice, once with each query's theorem
context (as every benchmark scores it: its file, its position, its accessible premises) and
once with none (every premise of the corpus a candidate, as the service sees a context-free
query), with BM25 and CFR without a context beside it for scale, and the share of queries whose
top 10 holds one of the corpus's first premises (the order a file-bound prior falls back to
without a file: Aesop's). Intervals: 95% paired bootstrap resampling theorems. Writes
benchmarks/results/fusion-context-<dataset>-<split>.{json,md}, and each query's R@10 per row (and
the no-file rows' top 10) to per_query/<stem>.jsonl.gz.
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import (RESULTS_DIR, add_run_flags, command_line, git_commit, load_config,
                                         machine, mean_interval, paired_intervals, parser, require_clean_tree,
                                         to_plain, write_results)
from prover.benchmarking.per_query import write_per_query
from prover.utils.logs import setup_logging
from retriever.base import Context, RankedPremise, Retriever
from retriever.evaluation.benchmark import members_trained_by, training_summaries
from retriever.settings import RetrieverTrainConfig

HEAD = 100  # the corpus's first premises: what usage and locality list when there is no file


class WithoutContext(Retriever):
    """`inner`, asked as a request with no file is: every context dropped."""

    def __init__(self, inner: Retriever) -> None:
        super().__init__(inner.corpus)
        self.inner = inner
        self.name = f"{inner.name} (no file)"

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        return self.inner.retrieve(states, k, [None] * len(states))


class KeepFileOrder(Retriever):
    """A fusion member that keeps its file order with no file, as every member did before
    issue 48 (the corpus's own order, for usage and locality): the row that shows the change."""

    def __init__(self, inner: Retriever) -> None:
        super().__init__(inner.corpus)
        self.inner, self.name = inner, inner.name

    def retrieve(self, states: Sequence[str], k: int,
                 contexts: Sequence[Context | None]) -> list[list[RankedPremise]]:
        return self.inner.retrieve(states, k, contexts)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--config", default="configs/retriever/cpu.yaml", help="the run's training config")
    p.add_argument("--split", required=True, help="e.g. leandojo-real/select (choices) or leandojo-real/report")
    p.add_argument("--run-dir", default=None, help="the trained run (default: the config's run_dir)")
    p.add_argument("--results-dir", default=str(RESULTS_DIR))
    add_run_flags(p, "use a CFR its time budget stopped (rows marked partial)")
    args = p.parse_args(argv)
    setup_logging()
    require_clean_tree(args.allow_dirty)
    from prover.config import DataConfig
    from prover.data.dataset import Dataset
    from prover.data.pairs import premise_queries
    from prover.utils.runinfo import require_full_training
    from retriever.evaluation.evaluate import evaluate
    from retriever.models.learned_fusion import FusionModel, LearnedFusionRetriever
    from retriever.registry import build_retriever, require_trained
    from retriever.settings import RetrieverConfig
    overrides = ([f"run_dir={args.run_dir}"] if args.run_dir else []) + list(args.overrides)
    cfg = load_config(RetrieverTrainConfig, args.config, overrides)
    choice = RetrieverConfig(models=args.config, run_dir=cfg.run_dir, model_overrides=list(args.overrides))
    require_trained("fusion", choice)
    run = Path(cfg.run_dir)
    members = FusionModel.load(run / "fusion" / "model.json").members
    summaries = {m: json.loads((run / m / "summary.json").read_text())
                 for m in members if (run / m / "summary.json").is_file()}
    partial = require_full_training(summaries, args.allow_partial)
    ds = Dataset(cfg.data.root)
    corpus = ds.corpus()
    queries, _ = premise_queries(ds.theorems(args.split), corpus)
    data = DataConfig(root=str(cfg.data.root), split=args.split)  # the priors leave this split out
    fusion = build_retriever("fusion", corpus, choice, data=data)
    dense = next((m for m in fusion.members if m.name.startswith("cfr")), None)
    before = LearnedFusionRetriever([KeepFileOrder(m) for m in fusion.members], fusion.model)
    # An emulation on this run's fusion, not the fusion that shipped before issue 48 (six members,
    # no structure; its wrapper also bypasses structure's own no-file rule): that one scored 24.7.
    before.name = "fusion (no file, file-bound members kept: an emulation of before issue 48)"
    rows_of = {"fusion": fusion, "fusion (no file)": WithoutContext(fusion), before.name: WithoutContext(before),
               "bm25 (no file)": WithoutContext(build_retriever("bm25", corpus, choice, data=data))}
    if dense is not None:
        rows_of[f"{dense.name} (no file)"] = WithoutContext(dense)
    t0 = time.perf_counter()
    head = {p.full_name for p in corpus.premises[:HEAD]}
    clusters = [q.theorem for q in queries]
    per_query, head_share, top10 = {}, {}, {}
    for name, retriever in rows_of.items():
        retriever.name = name
        ranked = retriever.retrieve([q.state for q in queries], 10,
                                    [None] * len(queries)) if isinstance(retriever, WithoutContext) else None
        result = evaluate(retriever, queries, ks=(10,), rankings_k=10)
        per_query[name] = result.per_query["R@10"]
        if len(per_query[name]) != len(queries):
            raise SystemExit(f"error: {name} scored {len(per_query[name])} of {len(queries)} queries")
        if ranked is not None:
            head_share[name] = float(np.mean([bool(head & {h.premise.full_name for h in r}) for r in ranked]))
            top10[name] = [[h.premise.full_name for h in r] for r in ranked]
    base = per_query["fusion"]
    rows = []
    for name, r10 in per_query.items():
        lo, hi = mean_interval(r10, clusters=clusters)
        row = {"row": name, "R@10": round(float(r10.mean()), 4), "R@10 95% CI": [round(lo, 4), round(hi, 4)]}
        if name != "fusion":
            d = paired_intervals(r10, base, clusters=clusters).diff
            row["minus fusion with file, 95% CI"] = [round(d[0], 4), round(d[1], 4)]
        if name in head_share:
            row["top 10 with a corpus-head premise"] = round(head_share[name], 4)
        rows.append(row)
    result = {"benchmark": "fusion-context", "command": command_line("benchmarks/fusion_context.py", argv),
              "config": to_plain(cfg), "git_commit": git_commit(), "machine": machine(),
              "seconds": round(time.perf_counter() - t0, 1), "split": args.split, "run_dir": str(run),
              "n_queries": len(queries), "n_theorems": len(set(clusters)), "members": members,
              "partial": partial, "rows": rows,
              # every model the fused ranking rests on: the members' stages and the fit itself
              "trained": training_summaries(cfg, members_trained_by(members) + ["fusion"])}
    lines = [f"# The fusion with and without a file context: {args.split} ({len(queries)} queries, "
             f"{len(set(clusters))} theorems)", "",
             f"`{result['command']}` at commit {result['git_commit']}, run `{run}`"
             + (f" (PARTIAL: {partial})" if partial else "") + ". With a file: each query's theorem "
             "context, as every benchmark scores it. No file: every premise a candidate, as a served "
             "request without `file_path`. Brackets: 95% bootstrap intervals resampling theorems; "
             "the difference is paired, in points.", "",
             f"| row | R@10 | − fusion with file | top 10 with one of the corpus's first {HEAD} premises |",
             "|---|---|---|---|"]
    for r in rows:
        ci, d = r["R@10 95% CI"], r.get("minus fusion with file, 95% CI")
        share = r.get("top 10 with a corpus-head premise")
        lines.append(f"| {r['row']} | {100 * r['R@10']:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}] | "
                     f"{'' if d is None else f'[{100 * d[0]:+.1f}, {100 * d[1]:+.1f}]'} | "
                     f"{'' if share is None else f'{100 * share:.1f}%'} |")
    stem = Path(args.results_dir) / f"fusion-context-{Path(cfg.data.root).name}-{args.split.replace('/', '-')}"
    # What each number averages, per query: every row's R@10, and the no-file rows' top 10 (issue 62).
    result["per_query"] = write_per_query(stem, [
        {"query": i, "theorem": q.theorem, "gold": sorted(corpus.premises[g].full_name for g in q.gold),
         "rows": {name: {"R@10": round(float(v[i]), 6), **({"top10": top10[name][i]} if name in top10 else {})}
                  for name, v in per_query.items()}}
        for i, q in enumerate(queries)])
    write_results(stem, result, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
