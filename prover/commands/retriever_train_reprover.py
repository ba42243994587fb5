"""`prover retriever train-reprover`: train the ReProver-style baseline (resumes if interrupted)."""
from __future__ import annotations

from pathlib import Path

from prover.config import load_config
from prover.utils.runinfo import partial_line
from retriever.settings import RetrieverTrainConfig


def run_train_reprover(config: str | None, overrides: list[str]) -> int:
    cfg = load_config(RetrieverTrainConfig, config, list(overrides))
    # Heavy imports (torch, transformers) only once the config is known good: a typo is answered at once.
    from retriever.training.train_reprover import train_reprover
    summary = train_reprover(cfg)
    best = summary["best_val_R@10"]
    print(f"reprover: {summary['steps']} steps in {summary['seconds']:.0f} s, "
          f"best val R@10 {'n/a' if best is None else f'{100 * best:.1f}%'}"
          f"{' (stopped by the time budget)' if summary['stopped_by_budget'] else ''}")
    print(f"model: {summary['model_dir']}; summary: {Path(cfg.run_dir) / 'reprover' / 'summary.json'}")
    if line := partial_line(summary, "reprover"):
        print(line)
    return 0
