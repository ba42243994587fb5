"""Schema of `prover demo`: every key here is used by the demo, so an override that sets
anything else is an error, not a silent no-op.

The defaults are the demo: the hand-written demo library, a tiny CFR and a tiny generator
trained on the spot (seconds each on 2 CPU cores), then a short replay proof search. A YAML file
(`prover demo --config FILE`) or `key=value` overrides change them. Importing this module is
cheap (no torch), so a bad override is answered before any model code loads.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from generator.settings import AugmentConfig, GenerateConfig, InputConfig, ModelConfig, NeighborsConfig, TrainConfig
from prover.config import ConfigError, DataConfig
from prover.search.best_first import SearchConfig
from retriever.settings import CFRConfig, EncoderConfig, PretrainConfig, RetrieverConfig, TokenizerConfig

# Rows the demo can show: retrievers that need no training, and the CFR it trains itself.
UNTRAINED_RETRIEVERS = ("bm25", "bm25-plain")
TRAINED_RETRIEVER = "cfr-conventional"
RETRIEVERS = (*UNTRAINED_RETRIEVERS, TRAINED_RETRIEVER)


@dataclass
class DemoRetrieverConfig:
    """The tiny CFR: WordPiece tokenizer and MLM pre-training, then the bi-encoder.

    Conventional similarity and states cut on the left, as `configs/retriever/cpu.yaml`
    (the recipe that won on random/val). Steps are fixed, not a time budget, so the demo
    trains the same model on every machine.
    """

    tokenizer: TokenizerConfig = field(default_factory=lambda: TokenizerConfig(vocab_size=1000, min_frequency=1))
    encoder: EncoderConfig = field(default_factory=lambda: EncoderConfig(
        hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128, max_positions=256))
    pretrain: PretrainConfig = field(default_factory=lambda: PretrainConfig(
        max_len=128, batch_size=16, grad_accum=1, lr=1e-3, warmup_steps=5, epochs=15, log_every=50,
        checkpoint_every=10_000))
    cfr: CFRConfig = field(default_factory=lambda: CFRConfig(
        similarity="conventional", temperature=0.05, batch_size=16, max_state_len=128,
        max_premise_len=64, state_truncation_side="left", lr=1e-3, warmup_steps=5, epochs=15,
        eval_every=-1, log_every=50, checkpoint_every=10_000))


@dataclass
class DemoGeneratorConfig:
    """The tiny tactic generator: a byte-level T5 from scratch, on premise-augmented tactics."""

    augment: AugmentConfig = field(default_factory=lambda: AugmentConfig(max_premises=3))
    input: InputConfig = field(default_factory=lambda: InputConfig(max_bytes=320, max_target_bytes=96))
    model: ModelConfig = field(default_factory=lambda: ModelConfig(
        d_model=64, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=2, d_kv=32, dropout=0.0))
    # Validated only before and after training (eval_every larger than any run): a validation
    # pass costs as much as a dozen steps here.
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        batch_size=16, lr=3e-3, warmup_steps=10, epochs=15, log_every=50, checkpoint_every=10_000,
        eval_every=100_000, eval_examples=16, eval_beams=2))
    # The tactics of the nearest training states join the model's candidates (kNN-LM), as in
    # configs/generator/cpu.yaml: on real tactics they carry most of what the generator gets right.
    neighbors: NeighborsConfig = field(default_factory=lambda: NeighborsConfig(k=50, temperature=3.0, weight=0.5))


@dataclass
class DemoSearchConfig:
    """Best-first search on Ray over the first theorems of the split, in the replay simulator."""

    theorems: int = 10
    # Premises for the generator's input: the one retriever-choice type (its name and k here;
    # the corpus and models are the demo's own, filled in when the search is built).
    retriever: RetrieverConfig = field(default_factory=lambda: RetrieverConfig(name=TRAINED_RETRIEVER, k=3))
    # 24 tactics an expansion: the neighbours' tactics join the model's 24-beam.
    generator: GenerateConfig = field(default_factory=lambda: GenerateConfig(num_tactics=24, batch_size=8))
    # The search is bounded by expansions, so it proves the same theorems on a busy machine as on
    # a quiet one; the time limit is only a safety net, far above what 20 expansions take on a
    # loaded 2-core machine (a theorem it stops is recorded as a timeout, never as proved).
    search: SearchConfig = field(default_factory=lambda: SearchConfig(max_expansions=20, timeout_s=600.0))
    workers: int = 2


@dataclass
class DemoConfig:
    data: DataConfig = field(default_factory=lambda: DataConfig(split="random/test"))
    out_dir: str = "runs/demo"
    seed: int = 42
    retrievers: list[str] = field(default_factory=lambda: list(RETRIEVERS))  # rows of the table
    retriever: DemoRetrieverConfig = field(default_factory=DemoRetrieverConfig)
    generator: DemoGeneratorConfig = field(default_factory=DemoGeneratorConfig)
    search: DemoSearchConfig = field(default_factory=DemoSearchConfig)
    # torch threads per process (this one and each Ray actor): one, so that on a machine whose
    # cores other jobs hold, OpenMP workers do not spin waiting for cores (prover/utils/threads.py).
    threads: int = 1


def check_demo_config(cfg: DemoConfig) -> None:
    """Values the schema's types cannot check, said before anything heavy runs."""
    for key, name, allowed in [*(("retrievers", n, RETRIEVERS) for n in cfg.retrievers),
                               ("search.retriever.name", cfg.search.retriever.name, (*RETRIEVERS, "none"))]:
        if name not in allowed:
            raise ConfigError(f"{key}: unknown retriever {name!r} for prover demo; choose from "
                             f"{', '.join(allowed)}")
    if cfg.threads < 1:
        raise ConfigError(f"threads must be at least 1, not {cfg.threads}")
    if cfg.search.theorems < 1:
        raise ConfigError(f"search.theorems must be at least 1, not {cfg.search.theorems}")
