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

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf
from transformers import get_linear_schedule_with_warmup

from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.jsonio import write_json
from prover.data.pairs import PremiseQuery, premise_queries, state_premise_pairs
from prover.utils.progress import progress_bar
from retriever.models.cfr import CFREncoder, CFRRetriever, model_fingerprint
from retriever.evaluation.evaluate import evaluate
from retriever.settings import CFRConfig
from retriever.models.text import format_state
from prover.utils.training import (Budget, Progress, RunDir, epoch_order, mixed_precision, pick_device,
                                   save_dir_atomically, set_seed)

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


def cfr_config(cfg: Any) -> CFRConfig:
    """`cfg.cfr` as a plain CFRConfig (from an OmegaConf node or as is)."""
    return OmegaConf.to_object(cfg.cfr) if OmegaConf.is_config(cfg.cfr) else cfg.cfr


def make_batch(positives: Sequence[Sequence[int]], n_premises: int, premises_per_query: int,
               rng: np.random.Generator) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
    """Sample a batch for the given states' positive premise sets.

    Returns (premise_ids, targets, mask): the distinct corpus indices that are the batch's
    candidates, each state's target column, and a (B, len(premise_ids)) mask that is True
    where a candidate is another positive of that state (excluded from its softmax).
    """
    chosen = [int(rng.choice(np.asarray(pos))) for pos in positives]
    negatives = rng.integers(n_premises, size=(len(positives), premises_per_query - 1))
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


def train_cfr(cfg: Any, init: str | Path | None = None) -> Path:
    """Train (or resume) CFR as `cfg` says; returns the folder of the best model."""
    c = cfr_config(cfg)
    set_seed(cfg.seed)
    device = pick_device(cfg.device)
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
    corpus = ds.corpus()
    pairs, stats = state_premise_pairs(ds.theorems(cfg.train_split), corpus, ds.skips)
    if not pairs:
        raise ValueError(f"no training pairs in {cfg.train_split} of {cfg.data.root}")
    states = [format_state(p.state) for p in pairs]
    positives = [p.premises for p in pairs]
    val = _val_queries(ds, cfg, corpus)

    run = RunDir(cfr_run_dir(cfg))
    start = init_path(cfg, init)
    model = CFREncoder.from_pretrained(start, c).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    # No weight decay on biases and LayerNorm weights (nanoGPT's rule: decay matrices only).
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW([
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": c.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}], lr=c.lr)
    per_epoch = math.ceil(len(pairs) / c.batch_size)
    total = per_epoch * c.epochs if c.max_steps is None else min(per_epoch * c.epochs, c.max_steps)
    scheduler = get_linear_schedule_with_warmup(optimizer, min(c.warmup_steps, total), total)
    progress = run.load_checkpoint(model, optimizer, scheduler)
    if progress is not None and progress.done and progress.step >= total:
        log.info("CFR run %s is complete; nothing to do", run.path)
        return run.model_dir
    if progress is None:
        progress = Progress()
        run.log(event="start", init=str(start), similarity=c.similarity, pairs=len(pairs),
                val_queries=len(val), params=n_params, steps=total, pair_stats=stats.as_dict())
    log.info("CFR (%s): %d pairs, %d steps of %d, %d val queries, %.1fM params, from %s on %s",
             c.similarity, len(pairs), total, c.batch_size, len(val), n_params / 1e6, start, device)
    budget = Budget(progress, c.max_minutes)

    def validate() -> None:
        if not val:
            return
        t0 = time.perf_counter()
        with budget.excluded():  # validation re-encodes the whole corpus: not training
            # Exact (flat) search, so the number reflects the model, not the index.
            retriever = CFRRetriever(corpus, model, replace(c, index="flat"))
            metrics = evaluate(retriever, val, ks=(1, 5, 10), rankings_k=10).metrics
        r10 = metrics["R@10"]
        progress.extra["last_eval_step"] = progress.step
        if progress.step == 0:
            progress.extra["untrained_R@10"] = r10
        best = progress.best_metric is None or r10 > progress.best_metric
        if best:
            progress.best_metric = r10
            progress.extra["best_step"] = progress.step
            _save_model(model, run.model_dir)
            if c.index == "flat":
                # CAR's miner, the benchmark and the service load this instead of re-encoding
                # the corpus (a quarter of an hour per pass at the small size on one CPU thread).
                retriever.index.meta["model_sha1"] = model_fingerprint(run.model_dir)
                save_dir_atomically(run.path / "index", retriever.index.save)
        run.log(step=progress.step, epoch=progress.epoch, **{f"val_{k}": v for k, v in metrics.items()},
                best=best, eval_seconds=round(time.perf_counter() - t0, 1))
        log.info("step %d: val R@10 %.4f%s", progress.step, r10, " (best)" if best else "")
        run.save_checkpoint(model, optimizer, scheduler, progress)  # best_metric agrees with model/

    if progress.step == 0 and "last_eval_step" not in progress.extra:
        validate()  # the untrained baseline
    bar = progress_bar(total=total, initial=progress.step, desc=f"train CFR ({c.similarity})", unit="step")
    window_loss, window_ex, window_t = 0.0, 0, time.perf_counter()
    stopped = False
    model.train()
    while progress.step < total and not stopped:
        order = epoch_order(len(pairs), cfg.seed, progress.epoch)
        for b in range(progress.batch_in_epoch, per_epoch):
            if progress.step >= total:
                break
            if budget.exhausted():
                log.info("budget of %s min spent at step %d", c.max_minutes, progress.step)
                stopped = True
                break
            idx = order[b * c.batch_size: (b + 1) * c.batch_size]
            rng = np.random.default_rng([cfg.seed, progress.epoch, b])
            ids, targets, mask = make_batch([positives[i] for i in idx], len(corpus),
                                            c.premises_per_query, rng)
            with mixed_precision(device):
                s = model.embed_states([states[i] for i in idx])
                p = model.embed_premises([corpus.premises[j] for j in ids])
            loss = info_nce(s.float(), p.float(), targets.to(device), mask.to(device), c.temperature)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            progress.step += 1
            progress.batch_in_epoch = b + 1
            window_loss += loss.item() * len(idx)
            window_ex += len(idx)
            bar.update(1)
            if progress.step % c.log_every == 0 or progress.step == total:
                now = time.perf_counter()
                row = {"loss": round(window_loss / window_ex, 4),
                       "ex_per_s": round(window_ex / max(now - window_t, 1e-9), 1)}
                bar.set_postfix(refresh=False, **row)
                budget.tick()
                run.log(step=progress.step, epoch=progress.epoch, lr=scheduler.get_last_lr()[0],
                        seconds=round(progress.seconds, 1), **row)
                window_loss, window_ex, window_t = 0.0, 0, now
            if c.eval_every > 0 and progress.step % c.eval_every == 0:
                validate()
                model.train()
            if progress.step % c.checkpoint_every == 0:
                run.save_checkpoint(model, optimizer, scheduler, progress)
        if progress.batch_in_epoch >= per_epoch:
            progress.epoch += 1
            progress.batch_in_epoch = 0
            if c.eval_every == 0:
                validate()
                model.train()
    bar.close()

    # The last step is always evaluated (a budget stop too: the best model must be chosen
    # among all it saw); without validation the last model is the model.
    if val and progress.extra.get("last_eval_step") != progress.step:
        validate()
    elif not val:
        _save_model(model, run.model_dir)
    budget.tick()
    progress.done = progress.step >= total
    run.save_checkpoint(model, optimizer, scheduler, progress)
    summary = {"similarity": c.similarity, "init": str(start), "done": progress.done,
               "steps": progress.step, "epochs": progress.epoch, "seconds": round(progress.seconds, 1),
               "cpu_seconds": round(progress.cpu_seconds, 1),
               "pairs": len(pairs), "params": n_params, "val_split": cfg.val_split,
               "val_queries": len(val), "best_val_R@10": progress.best_metric,
               "best_step": progress.extra.get("best_step"), "warmup_steps": c.warmup_steps,
               "device": str(device),
               "untrained_val_R@10": progress.extra.get("untrained_R@10")}
    write_json(run.path / "summary.json", summary)
    log.info("CFR %s after %d steps (%.0f s): best val R@10 %s; model in %s",
             "done" if progress.done else "stopped", progress.step, progress.seconds,
             progress.best_metric, run.model_dir)
    return run.model_dir
