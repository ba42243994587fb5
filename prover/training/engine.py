"""The training loop every stage runs through.

A stage (`Stage`) brings its model, its `Recipe` (batch size, learning rate, schedule,
budgets: read off its own settings), and four things only it knows: the micro-batches of an
epoch, how to build one, its loss, and its evaluation. `fit` does everything else:

- AdamW (no weight decay on biases and LayerNorm weights unless the recipe says so) and a
  linear-decay or constant schedule after warm-up;
- each optimizer step takes the next `grad_accum` micro-batches of the epoch; each
  micro-batch's mean loss is weighted by its share of the step's weight (its examples, or
  the masked tokens of MLM), so the gradient is that of one big batch, on one worker or many;
- data-parallel workers (`workers.Workers`): each takes its shard of every micro-batch; the
  stage's loss runs as the forward of one module (`StageLoss`) under DistributedDataParallel,
  which sums the gradients over workers once a step (`no_sync` during accumulation); rank 0
  evaluates, saves and logs;
- bf16 autocast on CUDA around the stage's loss (a stage computes a contrastive loss's
  logits in fp32 itself); nothing on a CPU;
- gradient clipping, evaluation every `eval_every` steps or each epoch, the best model by
  `select` kept in `model/`, checkpoints that resume mid-epoch with the same batches,
  the CPU-time budget (`Budget`), a labelled progress bar and `train_log.jsonl`.

A recipe is its steps (or epochs), and its schedule ends there; the budget is only a guard. A
run the budget stops is partial: the log, the terminal and the stage's summary say so
(`Result.record`), and rerunning with a larger budget continues to the planned step.

Batch plans and per-batch randomness are functions of (seed, epoch, batch), so a resumed run
sees the batches it would have seen; a one-worker run on one CPU thread is byte-for-byte
reproducible, a run stopped by its budget and resumed included.
"""
from __future__ import annotations

import contextlib
import logging
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

from prover.training.run import Budget, Progress, RunDir, mixed_precision, set_seed
from prover.utils.files import save_dir_atomically
from prover.training.settings import Recipe, TrainerConfig
from prover.training.workers import Workers
from prover.utils.progress import progress_bar
from prover.utils.runinfo import git_commit

log = logging.getLogger(__name__)


class StageLoss(torch.nn.Module):
    """A stage's loss as one module's forward, so that DistributedDataParallel sees the whole
    step: our stages call their models through several methods (CFR encodes states and
    premises with one encoder; CAR scores groups), which DDP's hooks follow only inside one
    forward. `None` (a step with nothing on this worker, when each of its micro-batches is
    smaller than the worker count) is a zero loss over every parameter: the worker still takes
    part in the step's gradient sum, adding nothing to it (but a parameter no worker used then
    gets a zero gradient, where one worker alone would leave it without one)."""

    def __init__(self, stage: Stage) -> None:
        super().__init__()
        self.model = stage.model
        self.stage_loss = stage.loss

    def forward(self, batch: Any) -> torch.Tensor:
        if batch is None:
            return sum(p.sum() for p in self.model.parameters() if p.requires_grad) * 0.0
        return self.stage_loss(batch)


class Stage:
    """What is particular to one training stage. Subclasses set `label`, `model`, `recipe`
    (the stage's settings, a Recipe) and, where theirs differ, the choices below."""

    label: str
    model: torch.nn.Module
    recipe: Recipe
    decay_1d: bool = False  # also decay biases and LayerNorm weights (ReProver's AdamW does)
    schedule: str = "linear"  # "linear": decay to zero at the last step; "constant" after warm-up
    eval_at_start: bool = True  # evaluate the untrained model: the reference for every later one
    select: str | None = None  # the metric that keeps the best model in model/ (None: the last one)
    mode: str = "max"  # whether a larger or a smaller `select` is better
    unit: str = "examples"  # what `Stage.count` counts, for the throughput column

    def micro_batches(self, epoch: int) -> list[np.ndarray]:
        """The epoch's micro-batches of example indices, a function of (seed, epoch) only."""
        raise NotImplementedError

    def batch(self, examples: np.ndarray, epoch: int, index: int) -> Any:
        """The model's inputs for these examples (this worker's shard of micro-batch `index`)."""
        raise NotImplementedError

    def loss(self, batch: Any) -> torch.Tensor:
        """The mean loss over the batch's weight units (its examples, unless `weight` says)."""
        raise NotImplementedError

    def weight(self, batch: Any, examples: np.ndarray) -> float:
        """The batch's share of a step: what its mean loss is a mean over."""
        return float(len(examples))

    def count(self, batch: Any, examples: np.ndarray) -> int:
        """How many `unit` the batch holds (throughput only)."""
        return len(examples)

    def evaluate(self, extra: dict[str, Any]) -> dict[str, float]:
        """Validation metrics (rank 0 only); `extra` persists across resumes. {}: none."""
        return {}

    def save(self, run: RunDir, metrics: dict[str, float]) -> None:
        """Write the model (best so far, or final) to `run.model_dir`."""
        save_dir_atomically(run.model_dir, self.model.save_pretrained)


@dataclass
class Result:
    progress: Progress
    total_steps: int
    stopped_by: str  # "end" or "budget"
    parameters: int
    workers: int
    device: str
    metrics: dict[str, float] = field(default_factory=dict)  # the last evaluation's

    @property
    def partial(self) -> bool:
        return self.stopped_by == "budget"

    def record(self) -> dict[str, Any]:
        """What every stage's summary.json says about how its run ended, and the commit of the
        code that trained it (written here, by the stage, never added by hand: issue 62)."""
        return {"stopped_by": self.stopped_by, "steps": self.progress.step,
                "planned_steps": self.total_steps, "partial": self.partial, "git_commit": git_commit()}


def optimizer_for(model: torch.nn.Module, recipe: Recipe, decay_1d: bool = False) -> torch.optim.AdamW:
    params = [p for p in model.parameters() if p.requires_grad]
    if decay_1d:
        return torch.optim.AdamW(params, lr=recipe.lr, weight_decay=recipe.weight_decay)
    # As in BERT and nanoGPT: decay the matrices only, not biases and LayerNorm weights.
    return torch.optim.AdamW([
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": recipe.weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}], lr=recipe.lr)


def total_steps(recipe: Recipe, micro_per_epoch: int) -> int:
    total = math.ceil(micro_per_epoch / recipe.grad_accum) * recipe.epochs
    return total if recipe.max_steps is None else min(total, recipe.max_steps)


def begin(seed: int, device: str) -> tuple[Workers, torch.device]:
    """First thing in a stage's worker function: the seed (before the model is built, so
    every worker builds the same one) and this worker's place and device."""
    set_seed(seed)
    workers = Workers()
    return workers, workers.device(device)


def fit(stage: Stage, run: RunDir, device: torch.device, workers: Workers, seed: int,
        trainer: TrainerConfig | None = None) -> Result:
    """Train `stage` (or resume it from `run`'s checkpoint) until its steps or budget end.
    Every worker returns the result; only rank 0's has evaluated and saved."""
    check_replicas = trainer is not None and trainer.check_replicas
    r, model = stage.recipe, stage.model
    plans: dict[int, list[np.ndarray]] = {}

    def plan(epoch: int) -> list[np.ndarray]:
        if epoch not in plans:
            plans.clear()
            plans[epoch] = stage.micro_batches(epoch)
        return plans[epoch]

    total = total_steps(r, len(plan(0)))
    optimizer = optimizer_for(model, r, stage.decay_1d)
    scheduler = (get_constant_schedule_with_warmup(optimizer, r.warmup_steps) if stage.schedule == "constant"
                 else get_linear_schedule_with_warmup(optimizer, min(r.warmup_steps, total), max(total, 1)))
    progress = run.load_checkpoint(model, optimizer, scheduler) or Progress()
    stopped_at, progress.budget_stop = progress.budget_stop, None
    if stopped_at is not None and workers.main:
        _undo_stop_evaluation(run)
    if workers.world > 1:
        # Masks and dropout differ by worker (a checkpoint holds rank 0's random state only);
        # the weights all come from rank 0.
        set_seed(seed + workers.rank + 7919 * progress.step)
    workers.broadcast_weights(model)
    # One worker calls the stage's loss as it is: a one-thread CPU run stays byte-for-byte the plain loop.
    loss_fn = workers.data_parallel(StageLoss(stage), device) if workers.world > 1 else stage.loss
    n_params = sum(p.numel() for p in model.parameters())
    result = Result(progress, total, "end", n_params, workers.world, str(device))
    if progress.done and progress.step >= total:
        log.info("%s: already trained (%d steps); model in %s", stage.label, progress.step, run.model_dir)
        return result
    progress.attempts += 1
    attempt = progress.attempts
    if workers.main:
        run.log(event="start", attempt=attempt, step=progress.step, total_steps=total,
                parameters=n_params, workers=workers.world, device=str(device))
    log.info("%s: %.2fM parameters, %d steps of %d x %d on %d worker(s), %s (attempt %d, from step %d)",
             stage.label, n_params / 1e6, total, r.batch_size, r.grad_accum, workers.world, device,
             attempt, progress.step)
    budget = Budget(progress, r.max_minutes)
    autocast = (lambda: mixed_precision(device))

    def save_checkpoint() -> None:
        budget.tick()
        # After a budget stop the checkpoint stays the one saved at the stop (see below).
        if workers.main and not result.partial:
            run.save_checkpoint(model, optimizer, scheduler, progress)

    def evaluate() -> None:
        with budget.excluded():
            metrics = {}
            if workers.main:
                was_training = model.training
                model.eval()
                metrics = stage.evaluate(progress.extra)
                model.train(was_training)
            workers.barrier()
        result.metrics = metrics
        progress.last_eval_step = progress.step
        if progress.step == 0 and progress.initial_val is None:
            progress.initial_val = metrics
        progress.last_val = metrics
        if metrics:
            progress.evaluations.append({"step": progress.step, "epoch": progress.epoch, **metrics})
        best = False
        if stage.select is not None:
            value = metrics.get(stage.select)
            better = (progress.best_metric is None or value is None or
                      (value > progress.best_metric if stage.mode == "max" else value < progress.best_metric))
            if better:
                best = True
                progress.best_metric = value
                progress.best_step = progress.step
                if workers.main:
                    stage.save(run, metrics)
        if workers.main and metrics:
            run.log(step=progress.step, epoch=progress.epoch, best=best,
                    **{f"val_{k}": v for k, v in metrics.items()})
        if metrics:
            log.info("%s, step %d: val %s%s", stage.label, progress.step,
                     {k: round(v, 4) for k, v in metrics.items()}, " (best)" if best else "")
        save_checkpoint()

    evaluating = r.eval_every >= 0
    if evaluating and stage.eval_at_start and progress.step == 0 and progress.last_eval_step is None:
        evaluate()

    bar = progress_bar(total=total, initial=progress.step, desc=stage.label, unit="step",
                       disable=not workers.main)
    win_loss, win_steps, win_units, win_t0 = 0.0, 0, 0, time.perf_counter()

    def log_window() -> None:
        nonlocal win_loss, win_steps, win_units, win_t0
        if not win_steps:
            return
        now = time.perf_counter()
        budget.tick()
        row = {"loss": win_loss / win_steps, f"{stage.unit}_per_s": round(win_units / max(now - win_t0, 1e-9), 1)}
        progress.train_loss = row["loss"]
        if workers.main:
            run.log(step=progress.step, epoch=progress.epoch, lr=scheduler.get_last_lr()[0],
                    seconds=round(progress.seconds, 1), cpu_seconds=round(progress.cpu_seconds, 1), **row)
        bar.set_postfix(refresh=False, loss=f"{row['loss']:.4f}", **{f"{stage.unit}_s": f"{row[f'{stage.unit}_per_s']:.0f}"})
        win_loss, win_steps, win_units, win_t0 = 0.0, 0, 0, now

    model.train()
    while progress.step < total:
        if workers.any(budget.exhausted()):
            result.stopped_by = "budget"
            # The checkpoint is the uninterrupted run's state at this step, saved before the
            # stop's own evaluation (which an uninterrupted run does not make): a resumed run
            # then continues exactly as if never stopped.
            progress.budget_stop = progress.step
            if workers.main:
                run.save_checkpoint(model, optimizer, scheduler, progress)
            progress.budget_stop = None
            if workers.main and stage.select is not None and run.model_dir.exists():
                save_dir_atomically(run.path / BEFORE_STOP, lambda tmp: _copy_into(run.model_dir, tmp))
            break
        epoch, micro = progress.epoch, plan(progress.epoch)
        b0, b1 = progress.batch_in_epoch, min(progress.batch_in_epoch + r.grad_accum, len(micro))
        # Build every micro-batch of the step first: MLM's weights (masked tokens) are known
        # only once its masks are drawn, and the step's gradient is a mean over all of them.
        shards = [workers.shard(micro[b]) for b in range(b0, b1)]
        # A last micro-batch smaller than the worker count leaves some workers an empty shard.
        batches = [stage.batch(s, epoch, b) if len(s) else None for s, b in zip(shards, range(b0, b1))]
        weights = [stage.weight(x, s) if x is not None else 0.0 for x, s in zip(batches, shards)]
        step_weight = workers.sum(sum(weights))
        step_loss = 0.0
        todo = [(x, w) for x, w in zip(batches, weights) if w != 0]
        if workers.world > 1 and not todo:
            todo = [(None, 0.0)]  # nothing of this step here: still take part in its gradient sum
        for i, (x, w) in enumerate(todo):
            # DDP averages the gradients over the workers at this worker's last micro-batch
            # of the step (before it: no_sync); scaled by the world size, the average is the sum.
            accumulating = workers.world > 1 and i < len(todo) - 1
            with loss_fn.no_sync() if accumulating else contextlib.nullcontext():
                with autocast():
                    loss = loss_fn(x)
                (loss * (w / step_weight * workers.world)).backward()
            step_loss += loss.item() * w / step_weight
        torch.nn.utils.clip_grad_norm_(model.parameters(), r.grad_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        progress.step += 1
        progress.batch_in_epoch = b1
        epoch_end = b1 >= len(micro)
        if epoch_end:
            progress.epoch += 1
            progress.batch_in_epoch = 0
        win_loss += workers.sum(step_loss)
        win_steps += 1
        win_units += sum(stage.count(x, s) for x, s in zip(batches, shards) if x is not None)
        bar.update(1)
        if check_replicas:
            same = workers.replicas_equal(model)
            if workers.main:
                run.log(step=progress.step, replicas_equal=same)
        if progress.step % r.log_every == 0 or progress.step == total:
            log_window()
        if evaluating and ((progress.step % r.eval_every == 0) if r.eval_every > 0 else epoch_end):
            log_window()
            evaluate()
            win_t0 = time.perf_counter()  # keep evaluation time out of the throughput
        elif progress.step % r.checkpoint_every == 0:
            save_checkpoint()
    bar.close()
    log_window()
    # The last step is always evaluated (a budget stop too): the best model is chosen among
    # every one the run saw.
    if evaluating and progress.last_eval_step != progress.step:
        evaluate()
    if workers.main and (stage.select is None or progress.best_step is None):
        stage.save(run, result.metrics)
    progress.done = progress.step >= total
    save_checkpoint()
    if result.partial:
        log.warning("%s: PARTIAL model: its budget of %s min stopped it at step %d of %d planned "
                    "(stopped_by: budget); rerun with a larger max_minutes to continue to step %d",
                    stage.label, r.max_minutes, progress.step, total, total)
    if workers.main:
        run.log(event="stop", attempt=attempt, step=progress.step, planned_steps=total,
                stopped_by=result.stopped_by, partial=result.partial, seconds=round(progress.seconds, 1))
    workers.barrier()
    return result


BEFORE_STOP = "model.before_stop"  # in the run dir: the best model before a budget stop's evaluation


def _copy_into(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True)


def _undo_stop_evaluation(run: RunDir) -> None:
    """A budget stop evaluates the last step and may keep it as the best model; an uninterrupted
    run never saw that model, so a resumed run puts back the best one from before the stop."""
    kept = run.path / BEFORE_STOP
    if kept.exists():
        save_dir_atomically(run.model_dir, lambda tmp: _copy_into(kept, tmp))
        shutil.rmtree(kept)


@contextlib.contextmanager
def fp32() -> Any:
    """No autocast inside: a contrastive loss divides by a temperature of 0.02-0.05, so its
    logits are computed in fp32 even when the encoders ran in bf16."""
    with torch.autocast("cuda", enabled=False):
        yield
