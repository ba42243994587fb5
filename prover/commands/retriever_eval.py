"""`prover retriever eval`: one retriever on one split; rankings JSONL + metrics JSON/Markdown."""
from __future__ import annotations

import logging
import time
from pathlib import Path

from prover.config import load_config, to_plain

from retriever.settings import RetrievalEvalConfig
from prover.data.dataset import Dataset
from prover.data.jsonio import write_json
from prover.data.pairs import premise_queries
from prover.utils.runinfo import git_commit, machine
from retriever.evaluation.evaluate import evaluate, latency, markdown_table
from retriever.registry import build_retriever, require_trained, scope_of

log = logging.getLogger(__name__)


def run_eval(config: str | None, retriever: str | None, data: str | None, split: str | None,
             out: str | None, overrides: list[str]) -> int:
    flags = [f"{k}={v}" for k, v in (("retriever.name", retriever), ("data.root", data),
                                     ("data.split", split), ("eval.out_dir", out)) if v is not None]
    cfg = load_config(RetrievalEvalConfig, config, flags + list(overrides))
    # A trained retriever whose models are missing is said before minutes of data loading.
    scope = scope_of(cfg.retriever, cfg.data)
    require_trained(cfg.retriever.name, scope)
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive, source="--data" if data is not None else "data.root")
    corpus = ds.corpus()
    queries, no_gold = premise_queries(ds.theorems(cfg.data.split), corpus, ds.skips)
    t0 = time.perf_counter()
    r = build_retriever(cfg.retriever.name, corpus, scope)
    index_seconds = time.perf_counter() - t0
    out_dir = Path(cfg.eval.out_dir)
    res = evaluate(r, queries, ks=cfg.eval.ks, rankings_k=cfg.eval.rankings_k,
                   batch_size=cfg.eval.batch_size, rankings_path=out_dir / "rankings.jsonl")
    row = res.as_dict() | latency(r, queries, min(100, len(queries)))
    row["index_seconds"] = round(index_seconds, 2)
    write_json(out_dir / "metrics.json", {
        "config": to_plain(cfg), "git_commit": git_commit(), "machine": machine(),
        "dataset": ds.name, "split": cfg.data.split, "n_tactics_without_premises": no_gold,
        "skipped": ds.skips.as_dict(), **row})
    table = markdown_table([row], f"{r.name} on {ds.name} {cfg.data.split}")
    (out_dir / "metrics.md").write_text(table)
    print(table)
    if ds.skips.total():
        print(ds.skips.summary())
    print(f"rankings: {out_dir / 'rankings.jsonl'}; metrics: {out_dir / 'metrics.json'}")
    return 0
