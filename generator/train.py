"""`prover generator train`: cross-entropy training of the tactic generator.

Inputs are the augmented pairs from `generator.data` (built on first use). Checkpoints go to
`<run_dir>/generator/checkpoint` and a rerun resumes there; validation (loss per target
byte, and exact match of the top beam against the recorded tactic) runs each epoch or every
`train.eval_every` steps, and the model with the lowest validation loss is kept in
`<run_dir>/generator/model` (`from_pretrained`-loadable).
"""
from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf
from transformers import get_linear_schedule_with_warmup

from prover.data.jsonio import write_json
from prover.utils.progress import progress_bar
from prover.utils.runinfo import git_commit
from prover.utils.training import Budget, Progress, RunDir, length_grouped_order, pick_device, set_seed
from generator.data import build_split, load_pairs
from generator.inputs import normalize_tactic
from generator.model import TacticGenerator, frequent_targets, save_pool
from generator.neighbors import build_for_training

log = logging.getLogger(__name__)


@torch.no_grad()
def validate(gen: TacticGenerator, inputs: list[str], tactics: list[str], batch_size: int,
             beams: int) -> dict[str, float]:
    """Mean loss per target byte, and the fraction whose top beam is the recorded tactic."""
    gen.model.eval()
    total, n_bytes = 0.0, 0
    for lo in range(0, len(inputs), batch_size):
        ins, tacs = inputs[lo: lo + batch_size], tactics[lo: lo + batch_size]
        lps = gen.tactic_logprobs(ins, tacs)
        total -= sum(lps)
        n_bytes += sum(len(gen._labels([t])[0]) for t in tacs)
    hits = 0
    if beams > 0:
        for sugg, tac in zip(gen.generate(inputs, num_samples=beams, batch_size=batch_size), tactics):
            hits += bool(sugg) and normalize_tactic(sugg[0].tactic) == normalize_tactic(tac)
    gen.model.train()
    return {"loss": total / max(n_bytes, 1), "exact_match@1": hits / max(len(inputs), 1)}


def _subset(n: int, k: int, seed: int) -> np.ndarray:
    return np.arange(n) if k <= 0 or k >= n else np.sort(np.random.default_rng(seed).permutation(n)[:k])


def train_generator(cfg: Any) -> dict:
    """Train (or resume) under `cfg.run_dir/generator`; return the summary it writes."""
    tc = cfg.train
    set_seed(cfg.seed)
    device = pick_device(cfg.device)
    run = RunDir(Path(cfg.run_dir) / "generator")
    train_path, train_stats = build_split(cfg, cfg.train_split)
    val_path, _ = build_split(cfg, cfg.val_split)
    inputs, tactics = load_pairs(train_path)
    if not inputs:
        raise ValueError(f"{cfg.train_split} has no traced tactics to train on")
    lengths = [len(s.encode("utf-8")) for s in inputs]
    v_in, v_tac = load_pairs(val_path)
    keep = _subset(len(v_in), tc.eval_examples, cfg.seed)
    v_in, v_tac = [v_in[i] for i in keep], [v_tac[i] for i in keep]

    gen = TacticGenerator.create(cfg.model, OmegaConf.to_object(cfg.input), device)
    gen.pool = frequent_targets(tactics, tc.pool_size) if tc.pool_size else []
    model = gen.model
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay)
    per_epoch = math.ceil(len(inputs) / tc.batch_size)
    total = math.ceil(per_epoch / tc.grad_accum) * tc.epochs
    if tc.max_steps is not None:
        total = min(total, tc.max_steps)
    scheduler = get_linear_schedule_with_warmup(optimizer, min(tc.warmup_steps, total), total)
    progress = run.load_checkpoint(model, optimizer, scheduler) or Progress()
    log.info("generator: %.2fM params, %d train / %d val pairs, %d steps of %d x %d on %s",
             n_params / 1e6, len(inputs), len(v_in), total, tc.batch_size, tc.grad_accum, device)
    budget = Budget(progress, tc.max_minutes)

    def check() -> None:
        with budget.excluded():
            m = validate(gen, v_in, v_tac, tc.batch_size, tc.eval_beams) if v_in else {}
        if progress.step == 0:
            progress.extra["initial_val"] = m
        progress.extra["last_eval_step"] = progress.step
        best = not m or progress.best_metric is None or m["loss"] < progress.best_metric
        if best:
            progress.best_metric = m.get("loss")
            gen.save_pretrained(run.model_dir)
        run.log(step=progress.step, epoch=progress.epoch, best=best, **{f"val_{k}": v for k, v in m.items()})
        log.info("step %d: val %s%s", progress.step, {k: round(v, 4) for k, v in m.items()}, " (best)" if best else "")
        run.save_checkpoint(model, optimizer, scheduler, progress)

    if progress.step == 0 and "last_eval_step" not in progress.extra:
        check()  # the untrained reference
    model.train()
    bar = progress_bar(total=total, initial=progress.step, desc="train generator", unit="step")
    win_loss, win_n, win_t = 0.0, 0, time.perf_counter()
    stopped = progress.done
    while progress.step < total and not stopped:
        # Batches of similar input length: the encoder pads every input to its batch's longest.
        order = length_grouped_order(lengths, tc.batch_size, cfg.seed, progress.epoch)
        while progress.batch_in_epoch < per_epoch and progress.step < total:
            if budget.exhausted():
                log.info("budget of %s min spent at step %d", tc.max_minutes, progress.step)
                stopped = True
                break
            optimizer.zero_grad(set_to_none=True)
            for _ in range(tc.grad_accum):
                if progress.batch_in_epoch >= per_epoch:
                    break
                b = progress.batch_in_epoch
                idx = order[b * tc.batch_size: (b + 1) * tc.batch_size]
                loss = gen.loss([inputs[i] for i in idx], [tactics[i] for i in idx])
                (loss / tc.grad_accum).backward()
                win_loss, win_n = win_loss + loss.item(), win_n + 1
                progress.batch_in_epoch += 1
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            progress.step += 1
            bar.update(1)
            if progress.step % tc.log_every == 0:
                budget.tick()
                row = {"loss": round(win_loss / win_n, 4),
                       "batches_per_s": round(win_n / max(time.perf_counter() - win_t, 1e-9), 3)}
                bar.set_postfix(refresh=False, **row)
                run.log(step=progress.step, epoch=progress.epoch, lr=scheduler.get_last_lr()[0], **row)
                win_loss, win_n, win_t = 0.0, 0, time.perf_counter()
            if tc.eval_every and progress.step % tc.eval_every == 0:
                check()
            elif progress.step % tc.checkpoint_every == 0:
                budget.tick()
                run.save_checkpoint(model, optimizer, scheduler, progress)
        if progress.batch_in_epoch >= per_epoch:
            progress.epoch += 1
            progress.batch_in_epoch = 0
            if not tc.eval_every:
                check()
    bar.close()
    if progress.extra.get("last_eval_step") != progress.step:
        check()  # a budget stop still picks the best model among all validated
    budget.tick()
    if gen.pool and run.model_dir.exists():  # also for a model saved before the pool existed
        save_pool(run.model_dir, gen.pool)
    if cfg.neighbors.k and run.model_dir.exists():
        build_for_training(cfg).save(run.model_dir)
    progress.done = progress.step >= total
    run.save_checkpoint(model, optimizer, scheduler, progress)
    summary = {"git_commit": git_commit(), "model": str(run.model_dir), "params": n_params,
               "train_split": cfg.train_split, "val_split": cfg.val_split, "train_pairs": len(inputs),
               "val_pairs": len(v_in), "steps": progress.step, "epochs": progress.epoch, "done": progress.done,
               "seconds": round(progress.seconds, 1), "cpu_seconds": round(progress.cpu_seconds, 1),
               "initial_val": progress.extra.get("initial_val"), "best_val_loss": progress.best_metric,
               "augment": train_stats, "config": OmegaConf.to_container(cfg, resolve=True)}
    write_json(run.path / "summary.json", summary)
    log.info("generator: %d steps; best val loss %.4f (initial %.4f); model in %s", progress.step,
             progress.best_metric or math.nan, (progress.extra.get("initial_val") or {}).get("loss", math.nan),
             run.model_dir)
    return summary
