"""Refuse to score a split with models trained on another split strategy's training data.

A model trained on random/train has seen the proofs of most novel_premises/test theorems (1,914
of its 2,000 are in random/train), so its novel_premises numbers would be leaked. Each training
stage records the split it learned from in its summary.json (`train_split`; the fusion its fit
split, `split`); this module compares that with what the evaluated split allows.
"""
from __future__ import annotations

import logging
from pathlib import Path

from prover.data.dataset import Dataset
from prover.data.errors import UserInputError

log = logging.getLogger(__name__)

# MLM pretraining learns from text alone: training-split states and every corpus premise, and the
# corpus holds every theorem's statement whatever the split. It sees no premise label, so one
# pretrained encoder may start the models of every strategy.
LABEL_FREE = {"pretrain"}


def allowed_train_split(ds: Dataset, split: str) -> str:
    """The training split a model scored on `split` may have learned from: the split strategy's
    own train split (novel_premises/test -> novel_premises/train), else random/train (the real
    LeanDojo halves and other extra splits, whose theorems mathlib-src's train splits exclude)."""
    own = f"{split.split('/')[0]}/train"
    return own if ds.has_split(own) else "random/train"


def check_trained_on(ds: Dataset, split: str, summaries: dict[str, dict | None], run_dir: Path) -> None:
    """Raise UserInputError when a stage in `summaries` (stage -> its summary.json, None when
    absent) learned from a split that `split` does not allow; warn when it does not say."""
    allowed = allowed_train_split(ds, split)
    strategy = allowed.split("/")[0]
    for stage, summary in summaries.items():
        if summary is None or stage in LABEL_FREE:
            continue
        # The fusion learns its weights from the queries of its fit split (a validation split).
        learned = summary.get("split") if stage == "fusion" else summary.get("train_split")
        if learned is None:
            log.warning("%s: %s/summary.json does not record its train split; assuming %s",
                        stage, run_dir / stage, allowed)
            continue
        if learned == split or learned.split("/")[0] != strategy:
            raise UserInputError(
                f"{stage} in {run_dir / stage} learned from {learned}, but {split} may only be scored "
                f"with models trained on {strategy} splits ({allowed}); train them in their own "
                f"run_dir with train_split={allowed}")
