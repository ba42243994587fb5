"""`prover retriever train-car`: mine hard negatives with a first-stage retriever, train CAR.

Reads a retriever training config (`configs/retriever/{tiny,small,paper}.yaml`); the model
starts from `car.init`, else `<run_dir>/pretrain/model`. The first stage is `--first-stage`,
else `car.first_stage`. Rerunning the same command resumes from the checkpoint in
`retriever.models.car.car_run_dir` (`<run_dir>/car/` over `cfr`).
"""
from __future__ import annotations

import json
import logging

from prover.config import load_config
from prover.utils.runinfo import partial_line
from retriever.settings import RetrieverTrainConfig

log = logging.getLogger(__name__)


def run_train_car(config: str | None, overrides: list[str], first_stage_name: str | None = None,
                  init: str | None = None) -> int:
    cfg = load_config(RetrieverTrainConfig, config, list(overrides))
    # Heavy imports (torch, transformers) only once the config is known good: a typo is answered at once.
    from prover.data.dataset import Dataset
    from retriever.registry import build_retriever
    from retriever.training.train_car import train_car
    first_stage_name = first_stage_name or cfg.car.first_stage
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    corpus = ds.corpus()
    # The run's own training config: CFR finds its model under its run_dir.
    first_stage = build_retriever(first_stage_name, corpus, data=cfg.data, training=cfg)
    model_dir = train_car(cfg, first_stage, init_path=init)
    summary = json.loads((model_dir.parent / "summary.json").read_text())
    print(f"CAR over {first_stage.name}: {summary['steps']} steps, {summary['seconds']} s; "
          f"val R@5 {first_stage.name} {summary['first_stage_val'].get('R@5')} -> "
          f"{first_stage.name}+car {summary['best_val_R@5']}")
    print(f"model: {model_dir}; summary: {model_dir.parent / 'summary.json'}")
    if line := partial_line(summary, "car"):
        print(line)
    return 0
