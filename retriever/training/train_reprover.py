"""Train the ReProver-style retriever the way ReProver trains it.

Examples are (state_before, one gold premise) pairs, one per gold premise of every tactic
of the training split (ReProver's RetrievalDataset). A batch of B examples encodes B states
against B * (1 + negatives) premises; see `retriever.reprover` for the loss. AdamW with a
constant learning rate after linear warm-up and gradient clipping at 1.0, as ReProver's
`get_optimizers` and training config. Validation R@10 over the whole corpus (accessible
premises only) after every epoch and when the budget runs out; the best model is kept in
`run_dir/reprover/model`, and `summary.json` says how the run went.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prover.config import to_plain
from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.jsonio import write_json
from prover.data.pairs import PremiseQuery, premise_queries
from retriever.evaluation.evaluate import evaluate
from retriever.models.reprover import (ByteEncoder, ReProverRetriever, label_matrix, premise_text,
                                sample_negatives, similarity_loss)
from retriever.settings import ReProverConfig
from prover.training.settings import recipe_of
from prover.training.engine import Stage, begin, fit, fp32
from prover.training.launch import launch
from prover.training.run import RunDir, epoch_order

log = logging.getLogger(__name__)

Example = tuple[int, int]  # (query index, gold premise index)


def training_examples(queries: list[PremiseQuery]) -> list[Example]:
    return [(qi, p) for qi, q in enumerate(queries) for p in q.gold]


def make_batch(batch: list[Example], queries: list[PremiseQuery], corpus: Corpus,
               rc: ReProverConfig, rng: np.random.Generator) -> tuple[list[str], list[int], torch.Tensor]:
    """States, candidate premises (positives first, then each example's negatives), labels."""
    states, positives, negatives = [], [], []
    for qi, pos in batch:
        q = queries[qi]
        states.append(q.state)
        positives.append(pos)
        accessible = corpus.accessible_mask(q.file_path, q.position)
        negatives += sample_negatives(corpus, pos, accessible, rc.negatives,
                                      rc.negatives_same_file, rng)
    candidates = positives + negatives
    labels = label_matrix([queries[qi].gold for qi, _ in batch], candidates)
    return states, candidates, labels


def validate(encoder: ByteEncoder, corpus: Corpus, queries: list[PremiseQuery],
             rc: ReProverConfig, partial_dir: Path | None = None) -> tuple[float, ReProverRetriever]:
    """R@10 over accessible premises, with the corpus encoded by the current weights (an
    interrupted encode resumes from `partial_dir`)."""
    retriever = ReProverRetriever(corpus, encoder, rc.max_state_len, rc.max_premise_len,
                                  rc.encode_batch_size, partial_dir=partial_dir,
                                  state_truncation_side=rc.state_truncation_side)
    res = evaluate(retriever, queries, ks=(10,), rankings_k=10, batch_size=rc.encode_batch_size)
    return res.metrics["R@10"], retriever


def _subsample(queries: list[PremiseQuery], n: int, seed: int) -> list[PremiseQuery]:
    if n <= 0 or len(queries) <= n:
        return queries
    keep = np.sort(np.random.default_rng(seed).choice(len(queries), n, replace=False))
    return [queries[i] for i in keep]


class ReProverStage(Stage):
    """ReProver's batches (`make_batch`: positives, then each example's negatives) and its
    similarity loss; a constant learning rate after warm-up; validation R@10 after every
    epoch keeps the best model (and its corpus embeddings, which the benchmark loads)."""

    label = "train ReProver-style"
    # ReProver's AdamW decays every parameter; its learning rate is constant after warm-up.
    decay_1d, schedule, eval_at_start, select = True, "constant", False, "R@10"

    def __init__(self, cfg: Any, encoder: ByteEncoder, corpus: Corpus, train_q: list[PremiseQuery],
                 val_q: list[PremiseQuery], run: RunDir) -> None:
        rc: ReProverConfig = cfg.reprover
        self.cfg, self.rc, self.model, self.corpus, self.run = cfg, rc, encoder, corpus, run
        self.train_q, self.val_q = train_q, val_q
        self.examples = training_examples(train_q)
        self.texts = [premise_text(p) for p in corpus.premises]
        self.recipe = recipe_of(rc)
        self.retriever: ReProverRetriever | None = None

    def micro_batches(self, epoch: int) -> list[np.ndarray]:
        order = epoch_order(len(self.examples), self.cfg.seed, epoch)
        bs = self.rc.batch_size
        # The last partial batch is dropped, as ReProver does.
        return [order[b * bs: (b + 1) * bs] for b in range(max(1, len(self.examples) // bs))]

    def batch(self, examples: np.ndarray, epoch: int, index: int) -> tuple:
        # Negatives depend on (seed, epoch, batch) only, so a resumed run samples the same.
        rng = np.random.default_rng([self.cfg.seed, epoch, index])
        states, candidates, labels = make_batch([self.examples[i] for i in examples], self.train_q,
                                                self.corpus, self.rc, rng)
        return states, candidates, labels.to(next(self.model.parameters()).device)

    def loss(self, batch: tuple) -> torch.Tensor:
        states, candidates, labels = batch
        rc = self.rc
        s = self.model(states, rc.max_state_len, rc.state_truncation_side)
        p = self.model([self.texts[c] for c in candidates], rc.max_premise_len)
        with fp32():
            return similarity_loss(s.float(), p.float(), labels)

    def evaluate(self, extra: dict) -> dict[str, float]:
        # An interrupted corpus encode resumes from the run folder.
        r10, self.retriever = validate(self.model, self.corpus, self.val_q, self.rc, self.run.path)
        return {"R@10": r10}

    def save(self, run: RunDir, metrics: dict[str, float]) -> None:
        self.model.save(run.model_dir)
        if self.retriever is not None and metrics:
            # The benchmark loads these weights next: spare it re-encoding the whole corpus.
            self.retriever.save_embeddings(run.model_dir)


def train_reprover(cfg: Any) -> dict:
    """Train (or resume) under `cfg.run_dir/reprover`; returns the summary it writes.
    `trainer.workers` > 1 trains on Ray Train workers (prover/training/launch.py)."""
    launch(_train_reprover, cfg, trainer=cfg.trainer, run_dir=Path(cfg.run_dir) / "reprover")
    return json.loads((Path(cfg.run_dir) / "reprover" / "summary.json").read_text())


def _train_reprover(cfg: Any) -> None:
    rc: ReProverConfig = cfg.reprover
    run = RunDir(Path(cfg.run_dir) / "reprover")
    workers, device = begin(cfg.seed, cfg.device)
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()
    train_q, _ = premise_queries(ds.theorems(cfg.train_split), corpus, ds.skips)
    val_q, _ = premise_queries(ds.theorems(cfg.val_split), corpus, ds.skips)
    val_q = _subsample(val_q, rc.eval_queries, cfg.seed)
    if not training_examples(train_q):
        raise ValueError(f"{cfg.train_split} has no tactic with a premise in the corpus")
    encoder = (ByteEncoder.load(rc.init_from) if rc.init_from else ByteEncoder.fresh(rc)).to(device)
    if rc.gradient_checkpointing:
        encoder.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    stage = ReProverStage(cfg, encoder, corpus, train_q, val_q, run)
    log.info("%d training examples from %d states; %d validation queries", len(stage.examples),
             len(train_q), len(val_q))
    result = fit(stage, run, device, workers, cfg.seed, cfg.trainer)
    if not workers.main:
        return
    progress = result.progress
    evaluations = [{"step": e["step"], "epoch": e["epoch"], "R@10": e["R@10"]}
                   for e in progress.evaluations]
    summary = {
        "retriever": "reprover", "best_val_R@10": progress.best_metric, "evaluations": evaluations,
        **result.record(), "epochs_completed": progress.epoch, "done": progress.done,
        "warmup_steps": rc.warmup_steps, "max_steps": rc.max_steps, "device": result.device,
        "workers": result.workers, "stopped_by_budget": result.stopped_by == "budget",
        "seconds": round(progress.seconds, 1), "cpu_seconds": round(progress.cpu_seconds, 1),
        "train_split": cfg.train_split, "train_examples": len(stage.examples), "train_states": len(train_q), "val_queries": len(val_q),
        "parameters": result.parameters, "model_dir": str(run.model_dir), "config": to_plain(cfg),
    }
    write_json(run.path / "summary.json", summary)
    log.info("summary: %s", json.dumps({k: summary[k] for k in ("best_val_R@10", "steps", "seconds")}))
