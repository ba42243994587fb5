"""Train CAR: hard negatives from a first-stage retriever, then a cross-encoder over groups of
one positive and `car.negatives` negatives.

Loss per group: −log(Pr(s,p⁺) / Σ_{p'∈{p⁺}∪N} Pr(s,p')) with Pr = sigmoid(CAR logit)
(`retriever.car.car_loss`). Negatives are sampled from the first stage's top
`car.hard_negatives_k` for the state, so CAR learns to separate exactly the premises the
first stage confuses with the right one.

Everything lives in `car_run_dir(run_dir, first stage)` (`<run_dir>/car/` over `cfr`): `hard_negatives.jsonl` (mined once, reused by reruns),
`checkpoint/`, `train_log.jsonl`, `model/` (the best validation R@5 so far, loadable with
`CARScorer.from_pretrained`) and `summary.json`. Rerunning the same command resumes.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf

from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.jsonio import write_json
from prover.data.pairs import PremiseQuery, StatePremisePair, premise_queries, state_premise_pairs
from prover.data.premise import Premise
from prover.utils.runinfo import git_commit
from retriever.base import Retriever
from retriever.models.car import CARScorer, RerankRetriever, car_loss, car_run_dir
from retriever.evaluation.evaluate import evaluate
from retriever.training.hard_negatives import mine_hard_negatives
from prover.training.settings import recipe_of
from prover.training.engine import Stage, begin, fit
from prover.training.launch import launch
from prover.training.run import RunDir, epoch_order, mixed_precision

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------
# Training groups

class CARData:
    """Training examples, one per (state, positive premise), each drawn as a group
    [positive, negative₁, …, negativeₙ].

    Negatives are a function of (seed, epoch, example) only, so a resumed run draws exactly
    the groups the interrupted one would have."""

    def __init__(self, pairs: Sequence[StatePremisePair], hard_negatives: dict[int, list[int]],
                 corpus: Corpus, negatives: int, seed: int, random_negatives: int = 0) -> None:
        if not 0 <= random_negatives <= negatives:
            raise ValueError(f"car.random_negatives={random_negatives} must be within 0..car.negatives={negatives}")
        self.pairs = pairs
        self.hard = hard_negatives
        self.corpus = corpus
        self.negatives = negatives
        self.random_negatives = random_negatives
        self.seed = seed
        self.examples = [(i, p) for i, pair in enumerate(pairs) for p in pair.premises]

    def __len__(self) -> int:
        return len(self.examples)

    def group(self, j: int, epoch: int) -> list[int]:
        """Corpus indices [positive, negatives...] of example j in this epoch."""
        i, positive = self.examples[j]
        rng = np.random.default_rng([self.seed, epoch, j])
        n_hard = self.negatives - self.random_negatives
        pool = np.asarray(self.hard.get(i, []), dtype=np.int64)
        if self.random_negatives:
            hard = rng.choice(pool, min(n_hard, len(pool)), replace=False) if len(pool) else pool
            pair = self.pairs[i]
            mask = self.corpus.accessible_mask(pair.file_path, pair.position)
            mask[pair.premises] = False
            mask[hard] = False
            rest = np.flatnonzero(mask)
            if len(rest) >= self.negatives - len(hard):
                extra = rng.choice(rest, self.negatives - len(hard), replace=False)
                return [positive, *(int(n) for n in np.concatenate([hard, extra]))]
        if len(pool) < self.negatives:
            # Too few hard negatives (a small import closure): pad with random accessible premises.
            pair = self.pairs[i]
            mask = self.corpus.accessible_mask(pair.file_path, pair.position)
            mask[pair.premises] = False
            mask[pool] = False
            if not mask.any() and len(pool) == 0:  # nothing accessible but positives: any premise will do
                mask[:] = True
                mask[pair.premises] = False
            extra = np.flatnonzero(mask)
            extra = rng.choice(extra, min(len(extra), self.negatives - len(pool)), replace=False)
            pool = np.concatenate([pool, extra])
        # Fewer candidates than negatives only in toy corpora: repeat some rather than
        # make ragged groups.
        negs = rng.choice(pool, self.negatives, replace=len(pool) < self.negatives)
        return [positive, *(int(n) for n in negs)]

    def batch(self, examples: Sequence[int], epoch: int) -> tuple[list[str], list[Premise]]:
        """Flat (state, premise) lists, group after group, for `CARScorer.logits`."""
        states: list[str] = []
        premises: list[Premise] = []
        for j in examples:
            group = self.group(int(j), epoch)
            states += [self.pairs[self.examples[j][0]].state] * len(group)
            premises += [self.corpus.premises[g] for g in group]
        return states, premises


def group_loss(scorer: CARScorer, data: CARData, examples: Sequence[int], epoch: int) -> torch.Tensor:
    states, premises = data.batch(examples, epoch)
    with mixed_precision(scorer.device):
        logits = scorer.logits(states, premises)
    return car_loss(logits.float().view(len(examples), 1 + data.negatives))


@lru_cache(maxsize=1)
def _epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    order = epoch_order(n, seed, epoch)
    return [order[lo: lo + batch_size] for lo in range(0, n, batch_size)]


# ---------------------------------------------------------------------------------------
# The run

def validate(scorer: CARScorer, first_stage: Retriever, queries: Sequence[PremiseQuery],
             k1: int, first_stage_weight: float = 0.0) -> dict[str, float]:
    """Metrics of the re-ranked list (R@1/5/10, MRR, ...) on `queries`, ordered as the
    registry's cfr+car orders it (so the kept model is the best deployed one)."""
    if not queries:
        return {}
    rr = RerankRetriever(first_stage, scorer, k1, first_stage_weight)
    return evaluate(rr, queries, ks=(1, 5, 10), rankings_k=10).metrics


def _subset(items: list, n: int | None, seed: int) -> list:
    """A fixed random subset, in the original order: the first n items of a split often come
    from a few files."""
    if n is None or n <= 0 or n >= len(items):
        return items
    keep = np.sort(np.random.default_rng(seed).permutation(len(items))[:n])
    return [items[i] for i in keep]


class CARStage(Stage):
    """Groups of one positive and `car.negatives` negatives (`CARData`), `group_loss`;
    validation R@5 of the re-ranked list keeps the best model."""

    label = "train CAR"
    eval_at_start, select, unit = False, "R@5", "pairs"

    def __init__(self, cfg: Any, scorer: CARScorer, data: CARData, first_stage: Retriever,
                 val: list[PremiseQuery]) -> None:
        c = cfg.car
        self.cfg, self.c, self.scorer, self.model, self.data = cfg, c, scorer, scorer.model, data
        self.first_stage, self.val = first_stage, val
        self.recipe = recipe_of(c)

    def micro_batches(self, epoch: int) -> list[np.ndarray]:
        return _epoch_batches(len(self.data), self.c.batch_size, self.cfg.seed, epoch)

    def batch(self, examples: np.ndarray, epoch: int, index: int) -> tuple[np.ndarray, int]:
        return examples, epoch  # groups are drawn from (seed, epoch, example) in the loss

    def loss(self, batch: tuple[np.ndarray, int]) -> torch.Tensor:
        return group_loss(self.scorer, self.data, *batch)

    def count(self, batch: tuple[np.ndarray, int], examples: np.ndarray) -> int:
        return len(examples) * (1 + self.c.negatives)

    def evaluate(self, extra: dict) -> dict[str, float]:
        return validate(self.scorer, self.first_stage, self.val, self.c.k1, self.c.first_stage_weight)

    def save(self, run: RunDir, metrics: dict[str, float]) -> None:
        self.scorer.save_pretrained(run.model_dir)


def _car_inputs(cfg: Any, corpus: Corpus) -> tuple[list[StatePremisePair], Any, list[PremiseQuery]]:
    c = cfg.car
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
    pairs, pair_stats = state_premise_pairs(ds.theorems(cfg.train_split), corpus, ds.skips)
    if c.max_train_pairs is not None and c.max_train_pairs < len(pairs):
        log.info("CAR: training on a fixed random %d of %d pairs (car.max_train_pairs)", c.max_train_pairs, len(pairs))
        pairs = _subset(pairs, c.max_train_pairs, cfg.seed)
    val, _ = premise_queries(ds.theorems(cfg.val_split), corpus, ds.skips)
    return pairs, pair_stats, _subset(val, c.eval_queries, cfg.seed)


def train_car(cfg: Any, first_stage: Retriever, init_path: str | Path | None = None) -> Path:
    """Train CAR on `cfg.train_split` with negatives mined by `first_stage`; return the folder
    of the best model (by validation R@5 of the re-ranked list).

    `init_path`: the starting encoder (default `car.init`, else `<run_dir>/pretrain/model`). The corpus is
    the first stage's, so corpus indices agree between mining, training and evaluation.
    Hard negatives and the first stage's own validation are computed here, once; with
    `trainer.workers` > 1 the workers rebuild the first stage by its registered name."""
    run = RunDir(car_run_dir(cfg.run_dir, first_stage.name))
    if run.finished():
        log.info("CAR already trained; best model in %s", run.model_dir)
        return run.model_dir
    inputs = _car_inputs(cfg, first_stage.corpus)
    pairs, _, val = inputs
    mine_hard_negatives(first_stage, pairs, first_stage.corpus, cfg.car.hard_negatives_k,
                        run.path / "hard_negatives.jsonl")
    first_val_path = run.path / "first_stage_val.json"
    if not first_val_path.exists():
        metrics = evaluate(first_stage, val, ks=(1, 5, 10)).metrics if val else {}
        write_json(first_val_path, metrics)
        run.log(step=0, first_stage=first_stage.name, **{f"val_{m}": v for m, v in metrics.items()})
    alone = cfg.trainer.workers <= 1
    # Alone, the worker is this process: it takes the inputs read here instead of reading them again.
    launch(_train_car, cfg, first_stage if alone else first_stage.name, init_path, inputs if alone else None,
           trainer=cfg.trainer, run_dir=run.path)
    return run.model_dir


def _train_car(cfg: Any, first_stage: Retriever | str, init_path: str | Path | None,
               inputs: tuple[list[StatePremisePair], Any, list[PremiseQuery]] | None = None) -> None:
    c = cfg.car
    workers, device = begin(cfg.seed, cfg.device)
    if isinstance(first_stage, str):  # a Ray Train worker: the retriever itself does not travel
        from retriever.registry import build_retriever
        ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
        first_stage = build_retriever(first_stage, ds.corpus(), cfg)
    run = RunDir(car_run_dir(cfg.run_dir, first_stage.name))
    init_path = Path(init_path or c.init or Path(cfg.run_dir) / "pretrain" / "model")
    corpus = first_stage.corpus
    pairs, pair_stats, val = inputs or _car_inputs(cfg, corpus)
    hard = mine_hard_negatives(first_stage, pairs, corpus, c.hard_negatives_k,
                               run.path / "hard_negatives.jsonl")  # read from the cache
    data = CARData(pairs, hard, corpus, c.negatives, cfg.seed, c.random_negatives)
    if not len(data):
        raise ValueError(f"no training pairs with known premises in {cfg.train_split}")
    log.info("CAR: %d pairs, %d examples (1 positive + %d negatives each), %d val queries",
             len(pairs), len(data), c.negatives, len(val))
    scorer = CARScorer.from_encoder(init_path, c.max_len, c.score_batch_size, device, c.attention_dropout,
                                    c.truncation_side)
    scorer.meta = {"k1": c.k1, "first_stage": first_stage.name}
    stage = CARStage(cfg, scorer, data, first_stage, val)
    result = fit(stage, run, device, workers, cfg.seed, cfg.trainer)
    if not workers.main:
        return
    progress = result.progress
    first_val = json.loads((run.path / "first_stage_val.json").read_text())
    write_json(run.path / "summary.json", {
        "first_stage": first_stage.name, "init_path": str(init_path), "git_commit": git_commit(),
        "car": OmegaConf.to_container(OmegaConf.structured(c)),
        "train_split": cfg.train_split, "pairs": pair_stats.as_dict(), "examples": len(data),
        "mean_hard_negatives": round(float(np.mean([len(v) for v in hard.values()])), 2) if hard else 0,
        "val_queries": len(val), "first_stage_val": first_val,
        "best_val_R@5": progress.best_metric, **result.record(), "epoch": progress.epoch,
        "seconds": round(progress.seconds, 1), "cpu_seconds": round(progress.cpu_seconds, 1),
        "done": progress.done, "workers": result.workers,
        "model": str(run.model_dir),
    })
    log.info("CAR: %d steps in %.0f s; best val R@5 %s (first stage %s); model in %s", progress.step,
             progress.seconds, progress.best_metric, first_val.get("R@5"), run.model_dir)
