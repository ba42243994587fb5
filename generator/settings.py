"""Structured configs for the tactic generator (configs/generator/*.yaml fill them in)."""
from __future__ import annotations

from dataclasses import dataclass, field

from prover.config import DataConfig

from retriever.settings import RetrieverConfig
from prover.training.settings import Recipe, TrainRunConfig
from prover.utils.byt5 import ByT5Size


@dataclass
class GeneratorDataConfig(DataConfig):
    # statement: one example per traced tactic as recorded (for mathlib-src: the whole proof);
    # tactic: statement-level proofs split into one example per tactic, plus the goals their
    # source states (prover/data/tactic_steps.py); targets over input.max_target_bytes dropped.
    granularity: str = "statement"


@dataclass
class AugmentConfig:
    """How training inputs get their premises (decoupled from any retriever, as in the paper)."""

    max_premises: int = 10
    # Of the negatives, this fraction comes from the positives' own files (hard, same topic),
    # the rest from other accessible files.
    same_module_fraction: float = 0.5
    # Tactics that used no known premise: "bare" keeps the state alone, "negatives" adds
    # max_premises random accessible premises (the model then learns premises may be noise).
    without_premises: str = "bare"
    # Of the tactics with known premises, the share shown any of them; the rest are shown
    # negatives alone (drawn as above: half from the gold premises' files), as a retriever that
    # missed would show them. 1.0: always (the paper's). The lease measures it from the
    # retriever's rankings on the selection split (benchmarks/device_generator.py).
    positive_rate: float = 1.0


@dataclass
class InputConfig:
    max_bytes: int = 2300  # premises + state, in UTF-8 bytes (ReProver's input length)
    max_target_bytes: int = 512
    # How a premise is shown (generator/inputs.py): "full" (name and statement, the paper's)
    # or "name" (the name alone).
    premise_text: str = "full"
    # None: the state is kept whole (the tokenizer cuts its start past max_bytes, and
    # premises go first). A number: the state keeps its last max_state_bytes bytes, so
    # max_bytes - max_state_bytes are left for premises whatever the state's length.
    max_state_bytes: int | None = None
    # Retrieval-augmented inputs (generator/inputs.py): this many of the most probable tactics
    # of the nearest training states (the model's tactic neighbours, `neighbors:`) written into
    # the input; a training example's own theorem is never its neighbour. 0: none.
    neighbor_tactics: int = 0
    # How the input is written, a fact of the model saved with it (input_config.json; for
    # ReProver's published checkpoints generator/input_format.py knows it by hub id):
    # "project" (generator/inputs.py, every model trained here) or "reprover" (ReProver's
    # layout, prover/data/reprover_text.py: each premise's code with its name marked, a blank
    # line after it, the best nearest the state; its tokenizer cuts the end past max_bytes).
    layout: str = "project"
    # False: the model was trained on bare states and is never handed premises (a benchmark
    # refuses a retriever row with it); ReProver's kaiyuy/leandojo-lean4-tacgen-byt5-small.
    reads_premises: bool = True

    def __post_init__(self) -> None:
        if self.layout not in ("project", "reprover"):
            raise ValueError(f"input.layout must be project or reprover, not {self.layout!r}")


@dataclass
class ModelConfig(ByT5Size):
    # Local folder or hub id (google/byt5-small, kaiyuy/leandojo-lean4-tacgen-byt5-small);
    # None: a fresh T5 of the ByT5Size it extends (byt5-small's by default) over bytes.
    init: str | None = None
    num_decoder_layers: int = 4
    dropout: float = 0.1


@dataclass
class TrainConfig(Recipe):
    batch_size: int = 8
    lr: float = 5e-4
    weight_decay: float = 0.0
    warmup_steps: int = 100
    epochs: int = 2
    eval_examples: int = 200  # validation examples for loss and exact match (fixed subset)
    eval_beams: int = 4
    # The model's tactic pool: this many of the most frequent training targets, scored for
    # every state beside beam search's candidates (generator/model.py). 0: beam search alone.
    pool_size: int = 0


@dataclass
class NeighborsConfig:
    """Tactic neighbours (generator/neighbors.py): the tactics of the nearest training states,
    mixed into the model's distribution."""

    k: int = 0  # nearest training states per query; 0: no neighbours (the model alone)
    # Of the softmax over the neighbours' BM25 scores; null: each vote proportional to the raw
    # score (the selection's grid tries both: benchmarks/generator_neighbors_selection.py).
    temperature: float | None = 3.0
    weight: float = 0.5  # of the neighbours' distribution in the mixture
    max_query_chars: int = 20_000  # a 100 KB state would only add noise terms and time

    def __post_init__(self) -> None:
        if self.k < 0 or (self.temperature is not None and self.temperature <= 0) or not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"neighbors needs k >= 0, temperature > 0 or null and weight in [0, 1], not {self}")


@dataclass
class GenerateConfig:
    """How a trained generator suggests tactics: the one generation settings type, given to
    TacticGenerator when it is built (proof search's `generator:` section nests it)."""

    # Tactics per state, best first (the beam's, the tactic pool's and the neighbours' together):
    # what proof search tries per expansion, what the service answers a request with, the n of
    # the generator benchmark's exact match@n. The one setting for it: read by TacticGenerator.
    num_tactics: int = 8
    # Beam width (or samples drawn), not a count of tactics returned; null: num_tactics. Fewer
    # beams than tactics: the rest come from the tactic pool and the neighbours, scored in one
    # pass (cheaper than a wider beam).
    num_beams: int | None = None
    method: str = "beam"  # beam | sampling
    temperature: float = 1.0
    batch_size: int = 16  # states per forward pass
    max_bytes: int | None = None  # input budget (default: the model's)
    # Nats added to a suggestion that names a retrieved premise (generator/model.py; 0: off).
    premise_bonus: float = 0.0

    def __post_init__(self) -> None:
        if self.num_tactics < 1 or (self.num_beams is not None and self.num_beams < 1):
            raise ValueError(f"num_tactics must be positive and num_beams positive or null, not "
                             f"{self.num_tactics} and {self.num_beams}")


@dataclass
class GeneratorTrainConfig(TrainRunConfig):
    data: GeneratorDataConfig = field(default_factory=GeneratorDataConfig)
    run_dir: str = "runs/generator"
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    input: InputConfig = field(default_factory=InputConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    neighbors: NeighborsConfig = field(default_factory=NeighborsConfig)


@dataclass
class GeneratorBenchmarkConfig(GenerateConfig):
    """benchmarks/tactic_generator.py: one trained generator under several premise conditions,
    generating as the GenerateConfig it extends says (num_tactics: EM@num_tactics)."""

    data: DataConfig = field(default_factory=lambda: DataConfig(split="random/test"))
    model: str = "runs/generator-tiny/generator/model"
    # none: the bare state; gold: the tactic's annotated premises; frequency: no model, the
    # `num_tactics` most frequent tactics of `train_split`'s examples for every state; any other
    # name: that registered retriever's top `retriever.k` (retriever.models names the trained
    # retrievers' config). A trained retriever whose models are missing is left out with the reason.
    conditions: list[str] = field(default_factory=lambda: ["none", "gold", "bm25", "cfr+car"])
    train_split: str = "random/train"  # the generator's training split (the frequency baseline's source)
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)  # its k: premises shown
    max_examples: int = 0  # a fixed random subset of the split's tactics (0: all)
    throughput_states: int = 32
    seed: int = 0
    results_dir: str = "benchmarks/results"
    # Score the model's tactic pool (if it has one) beside beam search; false: beam search
    # alone. A tag names a second results file (generator-<data>-<split>-<tag>.*).
    pool: bool = True
    # The pool's size at scoring time: this many of the most frequent training tactics (None:
    # the pool saved with the model, configs/generator/cpu.yaml's 64).
    pool_size: int | None = None
    # Mix the model's tactic neighbours (if it has them) into its suggestions; false: the
    # model alone (the `neighbors` baseline row still uses them).
    neighbors: bool = True
    # The neighbours' share of the mixture (None: the model folder's `neighbors.weight`).
    neighbors_weight: float | None = None
    # Tried, not shipped (generator/tried/instantiate.py): the tactic neighbours' one-premise
    # tactics filled with each of this many of the retrieved premises, scored by the model
    # beside its own (0: off).
    instantiate: int = 0
    results_tag: str = ""
