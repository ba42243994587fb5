"""`prover generator build-data | train | neighbors | suggest`."""
from __future__ import annotations

from pathlib import Path

from prover.config import load_config

# Most suggestions `generator suggest -n` gives: each is a beam or a sample, so the cost grows
# with it; proof search asks for 8 (cpu.yaml) to 64 (ReProver's) per state.
MAX_SUGGESTIONS = 256
from prover.utils.runinfo import partial_line


def run_build_data(config: str | None, overrides: list[str], splits: list[str] | None, force: bool) -> int:
    from generator.data import build_split, format_stats
    from generator.settings import GeneratorTrainConfig
    from prover.data.dataset import Dataset
    cfg = load_config(GeneratorTrainConfig, config, list(overrides))
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
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
    if line := partial_line(s, "train"):
        print(line)
    return 0


def run_neighbors(config: str | None, overrides: list[str]) -> int:
    """Index the training states' tactics into the trained model's folder (also done at the end
    of `train` when neighbors.k > 0; this adds them to a model trained before)."""
    from generator.settings import GeneratorTrainConfig
    cfg = load_config(GeneratorTrainConfig, config, list(overrides))
    if cfg.neighbors.k < 1:
        raise ValueError("neighbors.k is 0 in this config: set it (e.g. neighbors.k=50) to index neighbours")
    model_dir = Path(cfg.run_dir) / "generator" / "model"
    if not (model_dir / "config.json").exists():
        raise ValueError(f"no trained generator in {model_dir}: run `prover generator train` with this config first")
    from generator.neighbors import build_for_training
    nb = build_for_training(cfg)
    path = nb.save(model_dir)
    print(f"tactic neighbours: {len(nb.tactics)} training states (k {cfg.neighbors.k}, temperature "
          f"{'raw scores' if cfg.neighbors.temperature is None else cfg.neighbors.temperature}, weight {cfg.neighbors.weight}) -> {path}")
    return 0


def run_suggest(model: str, state_file: str, num: int, method: str, retriever: str | None, k: int,
                data: str | None, models: str | None, max_bytes: int | None) -> int:
    from prover.data.errors import UserInputError
    # The cheap checks first: a wrong path should not wait for torch, a retriever or a model.
    if not Path(state_file).is_file():
        what = "is a folder" if Path(state_file).is_dir() else "no such file"
        raise UserInputError(f"--state {state_file}: {what} (expected a file holding a proof "
                             f"state, e.g. '⊢ True')")
    if not 1 <= num <= MAX_SUGGESTIONS:
        raise UserInputError(f"-n {num}: give between 1 and {MAX_SUGGESTIONS} suggestions (each one is a "
                             f"beam or a sample; proof search asks for 8 to 64 per state)")
    try:
        state = Path(state_file).read_text(encoding="utf-8").strip()
    except UnicodeDecodeError as e:
        raise UserInputError(f"--state {state_file} is not UTF-8 text (byte {e.start}): expected a file "
                             f"holding a proof state, e.g. '⊢ True'") from None
    if "\x00" in state:
        raise UserInputError(f"--state {state_file} holds NUL bytes (a binary file?): expected a proof state "
                             f"as text, e.g. '⊢ True'")
    if not state:
        raise UserInputError(f"--state {state_file} is empty: expected a proof state")
    from generator.source import check_model_source
    check_model_source(model)  # before torch loads: a wrong path is answered at once
    from generator.model import TacticGenerator
    premises = []
    if retriever:
        if not data:
            raise ValueError("--retriever needs --data (the corpus to retrieve from)")
        from prover.data.dataset import Dataset
        from retriever.registry import build_retriever
        from retriever.settings import RetrieverConfig
        r = build_retriever(retriever, Dataset(data, source="--data").corpus(), RetrieverConfig(models=models))
        premises = [h.premise for h in r.retrieve([state], k, [None])[0]]
    gen = TacticGenerator.load(model)
    max_bytes = max_bytes or gen.input_cfg.max_bytes
    text, kept = gen.input_text(state, premises, max_bytes)
    if retriever:
        print(f"premises ({retriever}, {kept} of {len(premises)} fit in {max_bytes} bytes):")
        for p in premises[:kept]:
            print(f"  {p.full_name}")
    for s in gen.generate([text], num_tactics=num, method=method, states=[state])[0]:
        print(f"{s.logprob:9.3f}  {s.tactic}")
    return 0
