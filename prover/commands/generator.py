"""`prover generator build-data | train | suggest`."""
from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from prover.config import load_config


def run_build_data(config: str | None, overrides: list[str], splits: list[str] | None, force: bool) -> int:
    from generator.data import build_split, format_stats
    from generator.settings import GeneratorTrainConfig
    from prover.data.dataset import Dataset
    cfg = load_config(GeneratorTrainConfig, config, list(overrides))
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars)
    corpus = ds.corpus()
    for split in splits or [cfg.train_split, cfg.val_split]:
        path, stats = build_split(cfg, split, ds, corpus, force=force)
        print(format_stats(stats))
        print(f"  -> {path}")
    return 0


def run_train(config: str | None, overrides: list[str]) -> int:
    from generator.settings import GeneratorTrainConfig
    cfg = load_config(GeneratorTrainConfig, config, list(overrides))
    # Heavy imports (torch, transformers) only once the config is known good: a typo is answered at once.
    from generator.train import train_generator
    s = train_generator(cfg)
    init = (s["initial_val"] or {}).get("loss")
    print(f"generator: {s['steps']} steps in {s['seconds']:.0f} s; val loss per byte "
          f"{'n/a' if init is None else f'{init:.3f}'} -> {s['best_val_loss']:.3f} (best)")
    print(f"model: {s['model']}; summary: {Path(cfg.run_dir) / 'generator' / 'summary.json'}")
    return 0


def run_suggest(model: str, state_file: str, num: int, method: str, retriever: str | None, k: int,
                data: str | None, models: str | None, max_bytes: int | None) -> int:
    from prover.data.errors import UserInputError
    # The cheap checks first: a wrong path should not wait for torch, a retriever or a model.
    if not Path(state_file).is_file():
        raise UserInputError(f"--state {state_file}: no such file (expected a file holding a proof "
                             f"state, e.g. '⊢ True')")
    state = Path(state_file).read_text(encoding="utf-8").strip()
    if not state:
        raise UserInputError(f"--state {state_file} is empty: expected a proof state")
    from generator.inputs import format_input
    from generator.model import TacticGenerator, check_model_source
    check_model_source(model)
    premises = []
    if retriever:
        if not data:
            raise ValueError("--retriever needs --data (the corpus to retrieve from)")
        from prover.data.dataset import Dataset
        from retriever.registry import build_retriever
        cfg = OmegaConf.create({"retriever": {"models": models}}) if models else None
        r = build_retriever(retriever, Dataset(data, source="--data").corpus(), cfg)
        premises = [h.premise for h in r.retrieve([state], k, [None])[0]]
    gen = TacticGenerator.load(model)
    max_bytes = max_bytes or gen.input_cfg.max_bytes
    text, kept = format_input(state, premises, max_bytes, gen.input_cfg.premise_text)
    if retriever:
        print(f"premises ({retriever}, {kept} of {len(premises)} fit in {max_bytes} bytes):")
        for p in premises[:kept]:
            print(f"  {p.full_name}")
    for s in gen.generate([text], num_samples=num, method=method)[0]:
        print(f"{s.logprob:9.3f}  {s.tactic}")
    return 0
