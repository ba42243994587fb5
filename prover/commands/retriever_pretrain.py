"""`prover retriever pretrain`: MLM pre-training of the BERT encoder CFR and CAR start from."""
from __future__ import annotations

import json

from prover.config import load_config
from prover.utils.runinfo import partial_line
from retriever.settings import RetrieverTrainConfig


def run_pretrain(config: str | None, overrides: list[str]) -> int:
    cfg = load_config(RetrieverTrainConfig, config, list(overrides))
    # Heavy imports (torch, transformers) only once the config is known good: a typo is answered at once.
    from retriever.training.pretrain import pretrain
    model_dir = pretrain(cfg)
    summary = json.loads((model_dir.parent / "summary.json").read_text(encoding="utf-8"))

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.4f}"

    state = ("finished" if summary["done"]
             else f"stopped by the {summary['stopped_by']} (not finished)")
    print(f"pre-training {state}: {summary['steps']}/{summary['total_steps']} steps, "
          f"{summary['epochs']:.2f} epochs, {summary['seconds']:.0f} s on {summary['device']}, "
          f"{summary['parameters'] / 1e6:.2f}M parameters")
    print(f"MLM loss: train {fmt(summary['train_loss'])}, held-out {fmt(summary['eval_loss'])} "
          f"(untrained: {fmt(summary['eval_loss_init'])})")
    print(f"model + tokenizer: {model_dir}")
    print(f"summary: {model_dir.parent / 'summary.json'}; "
          f"log: {model_dir.parent / 'train_log.jsonl'}")
    if line := partial_line(summary, "pretrain"):
        print(line)
    return 0
