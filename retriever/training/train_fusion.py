"""Train the `fusion` ranker (retriever/models/learned_fusion.py) on a validation split.

The members rank the premises of every query of `fusion.split` (default: the config's
`val_split`, so the test split is never seen); each query's candidates become one example.
A k-fold cross-validation over those queries says how well the weights carry to queries
they were not fitted on (R@10 per fold, next to each member's own R@10); the final model is
fitted on all of them. Output: `<run_dir>/fusion/model.json` and `summary.json`.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from prover.data.dataset import Dataset
from prover.data.pairs import premise_queries
from prover.data.tactic_steps import tactic_level
from prover.utils.progress import progress_bar
from prover.utils.runinfo import git_commit
from retriever.base import TheoremContext
from retriever.models.learned_fusion import fit_fusion, order, rank_features
from retriever.registry import member_models

log = logging.getLogger(__name__)


def recall_at(ranked: np.ndarray, gold: set[int], k: int = 10) -> float:
    return len(gold & set(ranked[:k].tolist())) / len(gold)


def fusion_dir(cfg: Any) -> Path:
    return Path(cfg.run_dir) / "fusion"


def member_rankings(cfg: Any, split: str) -> tuple[list[list[list[int]]], list[set[int]]]:
    """Per query, each member's top `fusion.depth` corpus indices; and the queries' gold sets."""
    from retriever.registry import build_members, scope_of
    fc = cfg.fusion
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()
    theorems = ds.theorems(split)
    if fc.granularity == "tactic":
        theorems, _ = tactic_level(theorems, max_target_bytes=0)  # no byte budget: nothing is generated
    elif fc.granularity != "statement":
        raise ValueError(f"fusion.granularity must be statement or tactic, not {fc.granularity!r}")
    queries, _ = premise_queries(theorems, corpus, ds.skips)
    if fc.max_queries and len(queries) > fc.max_queries:
        keep = np.random.default_rng(cfg.seed).choice(len(queries), fc.max_queries, replace=False)
        queries = [queries[i] for i in sorted(keep)]
    if not queries:
        raise ValueError(f"fusion training: no query with a gold premise in {split}")
    # Members see the split as the evaluated one: usage and neighbors then count the proofs of
    # its strategy's train split, less any theorem of this split.
    scope = scope_of(None, {**OmegaConf.to_container(cfg.data, resolve=True), "split": split}, training=cfg)
    rankings: list[list[list[int]]] = [[] for _ in queries]
    for name, member in zip(fc.members, build_members(fc.members, corpus, scope)):
        bar = progress_bar(total=len(queries), desc=f"fusion training: {name} ranks {split}", unit="query")
        for lo in range(0, len(queries), 64):
            batch = queries[lo: lo + 64]
            hits = member.retrieve([q.state for q in batch], fc.depth,
                                   [TheoremContext(q.file_path, q.position) for q in batch])
            for j, h in enumerate(hits):
                rankings[lo + j].append([r.index for r in h])
            bar.update(len(batch))
        bar.close()
    return rankings, [set(q.gold) for q in queries]


def examples(rankings: list[list[list[int]]], gold: list[set[int]], depth: int) -> list[tuple]:
    """Per query: candidates, their features, which are gold, and the whole gold set."""
    out = []
    for r, g in zip(rankings, gold):
        cand, feats = rank_features(r, depth)
        labels = np.fromiter((c in g for c in cand.tolist()), dtype=bool, count=len(cand))
        out.append((cand, feats, labels, g))
    return out


def cross_validate(ex: list[tuple], members: list[str], depth: int, l2: float, folds: int,
                   seed: int) -> list[float]:
    """Per query, R@10 (over all its gold, listed by a member or not) of the model fitted on
    the other folds."""
    perm = np.random.default_rng(seed).permutation(len(ex))
    rec = np.zeros(len(ex))
    for held in np.array_split(perm, folds):
        model = fit_fusion([ex[i][1:3] for i in np.setdiff1d(perm, held)], members, depth, l2)
        for i in held:
            cand, feats, _, gold = ex[i]
            rec[i] = recall_at(order(cand, model.score(feats)), gold)
    return rec.tolist()


def train_fusion(cfg: Any) -> Path:
    fc = cfg.fusion
    split = fc.split or cfg.val_split
    if split.endswith("/test"):
        raise ValueError(f"fusion.split {split} is a test split: fit the fusion on a validation split")
    out = fusion_dir(cfg)
    done = out / "summary.json"
    models = member_models(cfg, fc.members)
    if (out / "model.json").exists() and done.exists():
        previous = json.loads(done.read_text())
        if previous.get("config") == OmegaConf.to_container(fc) and previous.get("member_models") == models:
            log.info("fusion: already fitted with this config and these members' models in %s", out)
            return out
        log.info("fusion: the config or a member's model changed since %s was fitted; refitting", out)
    t0, c0 = time.perf_counter(), time.process_time()
    rankings, gold = member_rankings(cfg, split)
    ranking_seconds = time.perf_counter() - t0
    members = list(fc.members)
    ex = examples(rankings, gold, fc.depth)
    # Recall counts every gold premise, also those no member listed (they cap what fusion can do).
    member_r10 = {m: float(np.mean([recall_at(np.asarray(r[i]), g) for r, g in zip(rankings, gold)]))
                  for i, m in enumerate(members)}
    ceiling = float(np.mean([len(g & set(c.tolist())) / len(g) for c, _, _, g in ex]))
    cv = cross_validate(ex, members, fc.depth, fc.l2, fc.folds, cfg.seed) if fc.folds > 1 else []
    model = fit_fusion([e[1:3] for e in ex], members, fc.depth, fc.l2)
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.json")
    summary = {
        "split": split, "queries": len(ex), "members": members, "depth": fc.depth, "l2": fc.l2,
        "member_R@10": {m: round(v, 4) for m, v in member_r10.items()},
        "candidates_recall": round(ceiling, 4),
        "cv_folds": fc.folds, "cv_R@10": round(float(np.mean(cv)), 4) if cv else None,
        "ranking_seconds": round(ranking_seconds, 1), "seconds": round(time.perf_counter() - t0, 1),
        "cpu_seconds": round(time.process_time() - c0, 1), "stopped_by": "end",
        "git_commit": git_commit(),  # the code that fitted it, written here, never by hand (issue 62)
        "config": OmegaConf.to_container(fc),
        "member_models": models,  # content hashes of the trained members' models
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    log.info("fusion on %s (%d queries): %d-fold R@10 %s; members %s", split, len(ex), fc.folds,
             summary["cv_R@10"], summary["member_R@10"])
    return out
