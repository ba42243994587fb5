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
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import get_constant_schedule_with_warmup

from prover.config import to_plain
from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.jsonio import write_json
from prover.data.pairs import PremiseQuery, premise_queries
from prover.utils.progress import progress_bar
from retriever.evaluation.evaluate import evaluate
from retriever.models.reprover import (ByteEncoder, ReProverRetriever, label_matrix, premise_text,
                                sample_negatives, similarity_loss)
from retriever.settings import ReProverConfig
from prover.utils.training import (Budget, Progress, RunDir, epoch_order, mixed_precision, pick_device,
                                   set_seed)

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


def train_reprover(cfg: Any) -> dict:
    """Train (or resume) under `cfg.run_dir/reprover`; returns the summary it writes."""
    rc: ReProverConfig = cfg.reprover
    run = RunDir(Path(cfg.run_dir) / "reprover")
    set_seed(cfg.seed)
    device = pick_device(cfg.device)

    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
    corpus = ds.corpus()
    train_q, _ = premise_queries(ds.theorems(cfg.train_split), corpus, ds.skips)
    val_q, _ = premise_queries(ds.theorems(cfg.val_split), corpus, ds.skips)
    val_q = _subsample(val_q, rc.eval_queries, cfg.seed)
    examples = training_examples(train_q)
    if not examples:
        raise ValueError(f"{cfg.train_split} has no tactic with a premise in the corpus")
    texts = [premise_text(p) for p in corpus.premises]
    log.info("%d training examples from %d states; %d validation queries", len(examples),
             len(train_q), len(val_q))

    encoder = (ByteEncoder.load(rc.init_from) if rc.init_from else ByteEncoder.fresh(rc)).to(device)
    if rc.gradient_checkpointing:
        encoder.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=rc.lr)
    scheduler = get_constant_schedule_with_warmup(optimizer, rc.warmup_steps)
    progress = run.load_checkpoint(encoder, optimizer, scheduler) or Progress()
    budget = Budget(progress, rc.max_minutes)
    n_batches = max(1, len(examples) // rc.batch_size)  # drop the last partial batch, as ReProver

    def checkpoint_and_validate() -> None:
        with budget.excluded():  # validation re-encodes the whole corpus: not training
            r10, retriever = validate(encoder, corpus, val_q, rc, run.path)
        evals = progress.extra.setdefault("evaluations", [])
        evals.append({"step": progress.step, "epoch": progress.epoch, "R@10": r10})
        improved = progress.best_metric is None or r10 > progress.best_metric
        if improved:
            progress.best_metric = r10
            encoder.save(run.model_dir)
            # The benchmark loads these weights next: spare it re-encoding the whole corpus.
            retriever.save_embeddings(run.model_dir)
        run.log(event="val", step=progress.step, epoch=progress.epoch, **{"val_R@10": r10},
                best=progress.best_metric)
        log.info("step %d: val R@10 %.4f%s", progress.step, r10, " (best, saved)" if improved else "")
        progress.extra["validated_step"] = progress.step
        budget.tick()
        run.save_checkpoint(encoder, optimizer, scheduler, progress)

    encoder.train()
    stopped_by_budget = False
    while not progress.done and not stopped_by_budget:
        if progress.epoch >= rc.epochs or (rc.max_steps is not None and progress.step >= rc.max_steps):
            progress.done = True
            break
        if budget.exhausted():
            stopped_by_budget = True
            break
        order = epoch_order(len(examples), cfg.seed, progress.epoch)
        bar = progress_bar(range(progress.batch_in_epoch, n_batches),
                           desc=f"train ReProver-style, epoch {progress.epoch}",
                           initial=progress.batch_in_epoch, total=n_batches, unit="batch")
        window: list[float] = []
        t0, seen = time.perf_counter(), 0
        for b in bar:
            batch = [examples[i] for i in order[b * rc.batch_size: (b + 1) * rc.batch_size]]
            # Negatives depend on (seed, epoch, batch) only, so a resumed run samples the same.
            rng = np.random.default_rng([cfg.seed, progress.epoch, b])
            states, candidates, labels = make_batch(batch, train_q, corpus, rc, rng)
            with mixed_precision(device):
                s = encoder(states, rc.max_state_len, rc.state_truncation_side)
                p = encoder([texts[c] for c in candidates], rc.max_premise_len)
            loss = similarity_loss(s.float(), p.float(), labels.to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(encoder.parameters(), rc.grad_clip)
            optimizer.step()
            scheduler.step()
            progress.step += 1
            progress.batch_in_epoch = b + 1
            window.append(loss.item())
            seen += len(batch)
            rate = seen / max(time.perf_counter() - t0, 1e-9)
            bar.set_postfix(refresh=False, loss=f"{loss.item():.4f}", ex_s=f"{rate:.1f}")
            if progress.step % rc.log_every == 0:
                run.log(step=progress.step, epoch=progress.epoch, loss=float(np.mean(window)),
                        lr=scheduler.get_last_lr()[0], examples_per_s=round(rate, 2))
                window.clear()
            if progress.step % rc.checkpoint_every == 0:
                budget.tick()
                run.save_checkpoint(encoder, optimizer, scheduler, progress)
            if rc.max_steps is not None and progress.step >= rc.max_steps:
                break
            if budget.exhausted():
                stopped_by_budget = True
                break
        bar.close()
        if rc.max_steps is not None and progress.step >= rc.max_steps:
            progress.done = True
            checkpoint_and_validate()
            break
        if not stopped_by_budget:
            progress.epoch += 1
            progress.batch_in_epoch = 0
            checkpoint_and_validate()

    # A budget stop (or a resumed run with none left) still leaves a validated, saved model.
    if progress.extra.get("validated_step") != progress.step or not run.model_dir.exists():
        checkpoint_and_validate()
    else:
        budget.tick()
        run.save_checkpoint(encoder, optimizer, scheduler, progress)

    summary = {
        "retriever": "reprover", "best_val_R@10": progress.best_metric,
        "evaluations": progress.extra.get("evaluations", []),
        "steps": progress.step, "epochs_completed": progress.epoch, "done": progress.done,
        "warmup_steps": rc.warmup_steps, "max_steps": rc.max_steps, "device": str(device),
        "stopped_by_budget": stopped_by_budget, "train_seconds": round(progress.seconds, 1), "cpu_seconds": round(progress.cpu_seconds, 1),
        "train_examples": len(examples), "train_states": len(train_q), "val_queries": len(val_q),
        "parameters": sum(p.numel() for p in encoder.parameters()),
        "model_dir": str(run.model_dir), "config": to_plain(cfg),
    }
    write_json(run.path / "summary.json", summary)
    log.info("summary: %s", json.dumps({k: summary[k] for k in ("best_val_R@10", "steps", "train_seconds")}))
    return summary
