"""`prover retriever train-fusion`: fit the `fusion` ranker on the validation split (seconds to
minutes: the members rank the split's queries once, then one logistic regression is fitted)."""
from __future__ import annotations

import json

from prover.config import load_config
from retriever.settings import RetrieverTrainConfig


def run_train_fusion(config: str | None, overrides: list[str]) -> int:
    cfg = load_config(RetrieverTrainConfig, config, list(overrides))
    # Heavy imports only once the config is known good: a typo is answered at once.
    from retriever.training.train_fusion import train_fusion
    out = train_fusion(cfg)
    s = json.loads((out / "summary.json").read_text())
    best = max(s["member_R@10"], key=s["member_R@10"].get)
    cv = "n/a" if s["cv_R@10"] is None else f"{100 * s['cv_R@10']:.1f}"
    print(f"fusion over {', '.join(s['members'])} on {s['split']} ({s['queries']} queries): "
          f"{s['cv_folds']}-fold R@10 {cv} (best member {best} {100 * s['member_R@10'][best]:.1f}; "
          f"gold among the candidates {100 * s['candidates_recall']:.1f})")
    print(f"model: {out / 'model.json'}; summary: {out / 'summary.json'}")
    return 0
