"""Train CFR: InfoNCE over the premises of a batch, starting from the pre-trained encoder.

Each step takes B training pairs (state, its positive premises). Per state we sample one
positive and |P'| − 1 negatives, uniformly from the whole corpus, accessible or not: the
encoder never sees accessibility (retrieval filters by it), an inaccessible premise is as
much a wrong answer as an accessible one, and uniform sampling needs no per-state mask.
Every premise of the batch is a candidate for every state (in-batch negatives), with two
corrections: a premise drawn twice is one candidate (so a shared positive is not also its
own negative), and a state's *other* positives are masked out of its softmax, never
pushed away as negatives.

Runs resume from their checkpoint (same batches, same negatives: both are functions of
(seed, epoch, batch)); the best model by validation R@10 is kept in `model/`.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.jsonio import write_json
from prover.data.pairs import PairStats, PremiseQuery, StatePremisePair, premise_queries, state_premise_pairs
from prover.data.tactic_steps import tactic_level
from prover.data.theorem import Theorem
from retriever.models.cfr import CFREncoder, CFRRetriever, cfr_config, model_fingerprint
from retriever.base import Retriever
from retriever.evaluation.evaluate import evaluate
from retriever.training.hard_negatives import mine_hard_negatives
from retriever.models.text import format_state
from prover.training.settings import recipe_of
from prover.training.engine import Stage, begin, fit, fp32
from prover.training.launch import launch
from prover.training.run import RunDir, epoch_order
from prover.utils.files import save_dir_atomically

log = logging.getLogger(__name__)


def cfr_run_dir(cfg: Any) -> Path:
    """`<run_dir>/cfr` for the fine-grained model, `<run_dir>/cfr-conventional` otherwise."""
    return Path(cfg.run_dir) / ("cfr" if cfg.cfr.similarity == "fine" else "cfr-conventional")


def init_path(cfg: Any, init: str | Path | None = None) -> Path:
    """The encoder CFR starts from: `init`, else `cfr.init`, else `<run_dir>/pretrain/model`."""
    return Path(init or cfg.cfr.init or Path(cfg.run_dir) / "pretrain" / "model")


def untrained_retriever(cfg: Any, corpus: Corpus, init: str | Path | None = None) -> CFRRetriever:
    """CFR straight from the starting encoder, no training: the baseline training must beat."""
    return CFRRetriever(corpus, init_path(cfg, init), cfr_config(cfg), cfg.device)


class _CacheOnly(Retriever):
    """Stands for the mining retriever in a worker: every pair is in the cache already."""

    def __init__(self, name: str, corpus: Corpus) -> None:
        super().__init__(corpus)
        self.name = name

    def retrieve(self, states, k, contexts=None):  # noqa: ANN001, ANN201
        raise RuntimeError("hard negatives missing from the cache: run train_cfr, which mines them first")


PAIRS = ("statement", "steps", "exact-steps")


def training_theorems(theorems: Iterable[Theorem], pairs: str) -> list[Theorem]:
    """The training theorems as `cfr.pairs` says (see CFRConfig): statement-level as they are,
    or their tactic-level pseudo steps (all, or those at an exact state only)."""
    if pairs not in PAIRS:
        raise ValueError(f"cfr.pairs={pairs!r}: expected one of {', '.join(PAIRS)}")
    if pairs == "statement":
        return list(theorems)
    steps, stats = tactic_level(theorems, max_target_bytes=0)  # no byte budget: nothing is generated
    log.info("CFR pairs from tactic-level steps: %s", stats.as_dict()["kept"])
    if pairs == "exact-steps":
        steps = [dataclasses.replace(t, traced_tactics=tuple(s for s in t.traced_tactics
                                                             if not getattr(s, "approximate_state", False)))
                 for t in steps]
    return steps


def make_batch(positives: Sequence[Sequence[int]], n_premises: int, premises_per_query: int,
               rng: np.random.Generator, hard: Sequence[Sequence[int]] | None = None
               ) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
    """Sample a batch for the given states' positive premise sets (and, with `hard`, each
    state's mined negatives to draw its own negatives from).

    Returns (premise_ids, targets, mask): the distinct corpus indices that are the batch's
    candidates, each state's target column, and a (B, len(premise_ids)) mask that is True
    where a candidate is another positive of that state (excluded from its softmax).
    """
    chosen = [int(rng.choice(np.asarray(pos))) for pos in positives]
    negatives = rng.integers(n_premises, size=(len(positives), premises_per_query - 1))
    if hard is not None:  # drawn after the uniform ones: without `hard` the stream is unchanged
        for i, pool in enumerate(hard):
            if len(pool):
                negatives[i] = rng.choice(np.asarray(pool), premises_per_query - 1)
    premise_ids = np.unique(np.concatenate([np.asarray(chosen, dtype=np.int64), negatives.ravel()]))
    column = {int(p): j for j, p in enumerate(premise_ids)}
    targets = torch.tensor([column[p] for p in chosen], dtype=torch.long)
    mask = torch.zeros(len(positives), len(premise_ids), dtype=torch.bool)
    for i, pos in enumerate(positives):
        for p in pos:
            j = column.get(int(p))
            if j is not None and j != targets[i]:
                mask[i, j] = True
    return premise_ids, targets, mask


def info_nce(states: torch.Tensor, premises: torch.Tensor, targets: torch.Tensor,
             mask: torch.Tensor | None, temperature: float, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of each state's target among all batch premises, logits ŝ·p / τ;
    masked candidates get −inf (they neither help nor hurt)."""
    logits = states @ premises.T / temperature
    if mask is not None:
        logits = logits.masked_fill(mask, float("-inf"))
    return F.cross_entropy(logits, targets, reduction=reduction)


def _save_model(model: CFREncoder, path: Path) -> None:
    save_dir_atomically(path, model.save_pretrained)


def _val_queries(ds: Dataset, cfg: Any, corpus: Corpus) -> list[PremiseQuery]:
    if cfg.cfr.eval_every < 0:
        return []
    queries, _ = premise_queries(ds.theorems(cfg.val_split), corpus, ds.skips)
    n = cfg.cfr.eval_queries
    if n and len(queries) > n:  # a fixed random subset, the same at every check
        keep = np.sort(np.random.default_rng(cfg.seed).choice(len(queries), n, replace=False))
        queries = [queries[i] for i in keep]
    return queries


class CFRStage(Stage):
    """InfoNCE over a batch's premises (`make_batch`, `info_nce`); validation R@10 over the
    whole corpus keeps the best model, and with a flat index its corpus vectors beside it."""

    select, unit = "R@10", "ex"

    def __init__(self, cfg: Any, model: CFREncoder, corpus: Corpus, states: list[str],
                 positives: list[list[int]], val: list[PremiseQuery],
                 hard: list[list[int]] | None = None) -> None:
        c = cfr_config(cfg)
        self.cfg, self.c, self.model, self.corpus = cfg, c, model, corpus
        self.states, self.positives, self.val, self.hard = states, positives, val, hard
        self.label = f"train CFR ({c.similarity})"
        self.recipe = recipe_of(c, **({} if val else {"eval_every": -1}))
        self.retriever: CFRRetriever | None = None

    def micro_batches(self, epoch: int) -> list[np.ndarray]:
        order = epoch_order(len(self.states), self.cfg.seed, epoch)
        bs = self.c.batch_size
        return [order[lo: lo + bs] for lo in range(0, len(order), bs)]

    def batch(self, examples: np.ndarray, epoch: int, index: int) -> tuple:
        # Negatives are a function of (seed, epoch, batch): a resumed run draws the same.
        rng = np.random.default_rng([self.cfg.seed, epoch, index])
        ids, targets, mask = make_batch([self.positives[i] for i in examples], len(self.corpus),
                                        self.c.premises_per_query, rng,
                                        None if self.hard is None else [self.hard[i] for i in examples])
        device = next(self.model.parameters()).device
        return ([self.states[i] for i in examples], [self.corpus.premises[j] for j in ids],
                targets.to(device), mask.to(device))

    def loss(self, batch: tuple) -> torch.Tensor:
        states, premises, targets, mask = batch
        s = self.model.embed_states(states)
        p = self.model.embed_premises(premises)
        with fp32():
            return info_nce(s.float(), p.float(), targets, mask, self.c.temperature)

    def evaluate(self, extra: dict) -> dict[str, float]:
        # Exact (flat) search, so the number reflects the model, not the index.
        self.retriever = CFRRetriever(self.corpus, self.model, replace(self.c, index="flat"))
        return evaluate(self.retriever, self.val, ks=(1, 5, 10), rankings_k=10).metrics

    def save(self, run: RunDir, metrics: dict[str, float]) -> None:
        _save_model(self.model, run.model_dir)
        if self.c.index != "flat":
            return
        # CAR's miner, the benchmark and the service load this index instead of re-encoding
        # the corpus (a quarter of an hour per pass at the small size on one CPU thread).
        # Without a validation of this model (cfr.eval_every=-1), the corpus is encoded here, once.
        if not metrics or self.retriever is None:
            was_training = self.model.training
            self.model.eval()
            self.retriever = CFRRetriever(self.corpus, self.model, replace(self.c, index="flat"))
            self.model.train(was_training)
        self.retriever.index.meta["model_sha1"] = model_fingerprint(run.model_dir)
        save_dir_atomically(run.path / "index", self.retriever.index.save)


def train_cfr(cfg: Any, init: str | Path | None = None) -> Path:
    """Train (or resume) CFR as `cfg` says; returns the folder of the best model.
    `trainer.workers` > 1 trains on Ray Train workers (prover/training/launch.py); each
    worker's in-batch negatives are then its own shard's premises."""
    c = cfr_config(cfg)
    inputs = None
    if c.hard_negatives and not RunDir(cfr_run_dir(cfg)).finished():
        # Mined once, here, before any worker starts: the workers read the cache.
        from retriever.registry import build_retriever
        inputs = _pairs(cfg)
        _, corpus, pairs, _ = inputs
        mine_hard_negatives(build_retriever(c.hard_negatives, corpus, data=cfg.data, training=cfg), pairs, corpus,
                            c.hard_negatives_k, cfr_run_dir(cfg) / "hard_negatives.jsonl")
    # Alone, the worker is this process: it takes the pairs read here instead of reading them again.
    alone = cfg.trainer.workers <= 1
    launch(_train_cfr, cfg, init, inputs if alone else None, trainer=cfg.trainer, run_dir=cfr_run_dir(cfg))
    return cfr_run_dir(cfg) / "model"


def _pairs(cfg: Any) -> tuple[Dataset, Corpus, list[StatePremisePair], PairStats]:
    """The dataset, its corpus and CFR's training pairs (as `cfr.pairs` says), with their counts."""
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()
    pairs, stats = state_premise_pairs(training_theorems(ds.theorems(cfg.train_split), cfr_config(cfg).pairs),
                                       corpus, ds.skips)
    if not pairs:
        raise ValueError(f"no training pairs in {cfg.train_split} of {cfg.data.root}")
    return ds, corpus, pairs, stats


def _train_cfr(cfg: Any, init: str | Path | None = None,
               inputs: tuple[Dataset, Corpus, list[StatePremisePair], PairStats] | None = None) -> None:
    c = cfr_config(cfg)
    workers, device = begin(cfg.seed, cfg.device)
    ds, corpus, pairs, stats = inputs or _pairs(cfg)
    val = _val_queries(ds, cfg, corpus)
    run = RunDir(cfr_run_dir(cfg))
    hard = None
    if c.hard_negatives:  # from the cache train_cfr filled; the first stage is not asked again
        mined = mine_hard_negatives(_CacheOnly(c.hard_negatives, corpus), pairs, corpus, c.hard_negatives_k,
                                    run.path / "hard_negatives.jsonl")
        hard = [mined[i] for i in range(len(pairs))]
    start = init_path(cfg, init)
    model = CFREncoder.from_pretrained(start, c).to(device)
    stage = CFRStage(cfg, model, corpus, [format_state(p.state) for p in pairs], [p.premises for p in pairs],
                     val, hard)
    if workers.main and not (run.checkpoint / "state.pt").exists():
        run.log(event="setup", init=str(start), similarity=c.similarity, pairs=len(pairs),
                val_queries=len(val), pair_stats=stats.as_dict())
    log.info("CFR (%s): %d pairs, %d val queries, from %s", c.similarity, len(pairs), len(val), start)
    result = fit(stage, run, device, workers, cfg.seed, cfg.trainer)
    if not workers.main:
        return
    progress = result.progress
    summary = {"similarity": c.similarity, "init": str(start), "done": progress.done,
               **result.record(), "epochs": progress.epoch, "seconds": round(progress.seconds, 1),
               "cpu_seconds": round(progress.cpu_seconds, 1), "workers": result.workers,
               "pairs": len(pairs), "params": result.parameters, "train_split": cfg.train_split,
               "val_split": cfg.val_split,
               "val_queries": len(val), "best_val_R@10": progress.best_metric,
               "best_step": progress.best_step, "warmup_steps": c.warmup_steps,
               "device": result.device,
               "untrained_val_R@10": (progress.initial_val or {}).get("R@10")}
    write_json(run.path / "summary.json", summary)
    log.info("CFR %s after %d steps (%.0f s): best val R@10 %s; model in %s",
             "done" if progress.done else "stopped", progress.step, progress.seconds,
             progress.best_metric, run.model_dir)
