"""Config schema of the neural retrievers: tokenizer, MLM pre-training, CFR, CAR, ReProver-style.

One YAML per model size under `configs/retriever/` (`tiny`, `small`, `paper`) fills these;
every stage reads the same file, so the stages of one experiment cannot disagree on sizes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from prover.config import DataConfig
from retriever.baselines.bm25 import BM25Config
from retriever.informal.settings import InformalConfig
from prover.training.settings import Recipe, TrainRunConfig
from prover.utils.byt5 import ByT5Size


@dataclass
class TokenizerConfig:
    vocab_size: int = 30_522
    min_frequency: int = 2


@dataclass
class EncoderConfig:
    """BERT size. Pre-training uses max_positions = max(CFR, CAR) lengths; both start from it."""

    hidden_size: int = 768
    num_layers: int = 6
    num_heads: int = 12
    intermediate_size: int = 3072
    max_positions: int = 1024
    dropout: float = 0.1


@dataclass
class PretrainConfig(Recipe):
    max_len: int = 512
    mlm_probability: float = 0.15
    batch_size: int = 32
    grad_accum: int = 4
    lr: float = 2e-4
    weight_decay: float = 0.01
    warmup_steps: int = 500
    epochs: int = 50
    eval_fraction: float = 0.05


@dataclass
class CFRConfig(Recipe):
    similarity: str = "fine"  # fine: s·½(Γ_p + G_p); conventional: s·p on the whole premise text
    temperature: float = 0.02
    # States per optimizer step, split over the workers and grad_accum's micro-batches. Each
    # state's in-batch negatives are the other premises of its own micro-batch on its own
    # worker: with N workers or grad_accum > 1 a state sees batch_size/(N·grad_accum) − 1
    # other states' premises, not batch_size − 1, so the recipe does not train the same.
    batch_size: int = 32
    premises_per_query: int = 2  # |P'|: the positive plus randomly sampled negatives
    max_state_len: int = 512
    max_premise_len: int = 256
    # Which end of a state longer than max_state_len is cut: "right" (HF's default) drops the
    # goal first; "left" keeps the goal and drops leading hypotheses (see car.truncation_side).
    state_truncation_side: str = "right"
    lr: float = 2e-4
    weight_decay: float = 0.01
    warmup_steps: int = 100
    epochs: int = 20
    eval_every: int = 0  # optimizer steps between validation R@10 checks (0: each epoch; -1: never)
    eval_queries: int = 500  # validation queries per check (a fixed random subset; 0: all)
    encode_batch_size: int = 128
    index: str = "flat"  # flat | ivf | hnsw
    index_nlist: int = 0  # ivf lists (0: about 4·√N)
    index_nprobe: int = 16  # ivf lists searched per query
    index_hnsw_m: int = 32  # hnsw neighbours per node
    init: str | None = None  # starting encoder folder (None: <run_dir>/pretrain/model)
    # Training pairs (issue 28). "statement": each training theorem's state with every premise
    # of its proof. "steps": the tactic-level pseudo steps of prover/data/tactic_steps.py, each
    # state with its own step's premises; later steps sit at the initial state (approximate)
    # and merge into it, and the goals a proof states (have/show/suffices/calc) add states of
    # their own. "exact-steps": only the steps whose state is exact (a `by` proof's first
    # tactic, a term proof), each with its own premises.
    pairs: str = "statement"
    # Negatives (issue 28). None: each state's |P'| − 1 negatives drawn uniformly from the
    # corpus. A registered retriever's name (e.g. bm25): drawn from that retriever's top
    # `hard_negatives_k` for the state, positives removed (mined once, cached in the run folder
    # as CAR's are); a state with none mined falls back to uniform ones. In-batch negatives
    # (every other state's premises) stay as they are.
    hard_negatives: str | None = None
    hard_negatives_k: int = 50


@dataclass
class CARConfig(Recipe):
    # Starting encoder folder (None: <run_dir>/pretrain/model, the MLM encoder CFR also starts
    # from). `${run_dir}/cfr/model` starts from the trained CFR encoder instead.
    init: str | None = None
    # The registered retriever CAR mines hard negatives from and re-ranks: `cfr` (the paper's
    # fine-grained CFR) or `cfr-conventional`. The model goes to `<run_dir>/car` over `cfr`,
    # `<run_dir>/car-<name without cfr->` over any other (see models/car.py's car_run_dir), so both
    # can be trained in one run folder; the benchmark names rows `cfr+car`,
    # `cfr-conventional+car`.
    first_stage: str = "cfr"
    hard_negatives_k: int = 100  # CFR candidates mined per training state
    negatives: int = 7
    # Of the `negatives`, how many are drawn uniformly from accessible premises instead of the
    # first stage's top k: a small model given only hard negatives stays at chance loss.
    random_negatives: int = 0
    # A fixed random subset of the training pairs (None: all). Mining CFR's top-100 costs an
    # index search per pair, wasted on pairs a CPU budget never reaches.
    max_train_pairs: int | None = None
    batch_size: int = 2
    grad_accum: int = 8
    max_len: int = 1024
    # Which end of a too-long state is cut: "right" (HF's default) drops the goal first, "left"
    # keeps the goal and drops leading hypotheses. At max_len 128 on mathlib-src random/val,
    # cutting right drops the whole goal from 22% of gold pairs (results/truncation-*-random-val.md).
    truncation_side: str = "right"
    # None keeps the encoder's (BERT: 0.1). Off, a CPU step of tiny CAR costs about a quarter
    # less (profiled on mathlib-src-mini).
    attention_dropout: float | None = None
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_steps: int = 100
    epochs: int = 8
    eval_every: int = 0  # optimizer steps between validation R@5 checks (0: each epoch)
    eval_queries: int = 200  # validation queries per check (a fixed random subset)
    k1: int = 20  # CFR candidates re-ranked at inference
    # Inference: order the k1 head by z(CAR) + w·z(CFR) (see car.RerankRetriever); 0 is the
    # paper's CAR-only order.
    first_stage_weight: float = 0.0
    # The `fusion+car` row: the fitted fusion's top k1 ordered by z(CAR) + w·z(fusion score),
    # with this CAR (trained over `first_stage`, a member of the fusion) and this w.
    fusion_weight: float = 1.0
    score_batch_size: int = 64


@dataclass
class ReProverConfig(Recipe, ByT5Size):
    """A ByT5-architecture retriever, of the ByT5Size it extends (byt5-small's encoder by
    default), trained as ReProver trains it (or its public checkpoint)."""

    checkpoint: str | None = None  # local path or hub id, e.g. kaiyuy/leandojo-lean4-retriever-byt5-small
    # Training starts from these weights (ReProver: google/byt5-small); None: random init at the
    # ByT5Size. Separate from `checkpoint`, which names the model the retriever serves.
    init_from: str | None = None
    # ReProver's retriever: max_seq_len 1024 for states and premises alike (2048 is its generator's).
    max_state_len: int = 1024
    max_premise_len: int = 1024
    # "right" (ReProver: 1024 bytes rarely cut anything); "left" keeps the goal of a long state,
    # which matters at CPU-budget lengths.
    state_truncation_side: str = "right"
    batch_size: int = 8
    negatives: int = 3
    negatives_same_file: int = 1
    dropout: float = 0.1
    lr: float = 1e-4
    weight_decay: float = 0.01  # torch's AdamW default, on every parameter (as ReProver's)
    warmup_steps: int = 100
    grad_clip: float = 1.0  # ReProver's gradient_clip_val
    # Recompute activations in the backward pass: ~1/3 more compute, a fraction of the memory.
    # At ByT5-small size, batch 8 with 32 candidates of 1024 bytes needs more than an 80 GB
    # H100 without it (results/train-throughput-paper-cuda.md).
    gradient_checkpointing: bool = False
    epochs: int = 2
    # Optimizer steps in all (None: epochs). The schedule is constant after warm-up, so this only
    # stops: a GPU run given the steps a CPU budget buys trains the very same recipe.
    max_steps: int | None = None
    eval_queries: int = 500  # validation queries per check (0: all)
    encode_batch_size: int = 64


@dataclass
class FusionConfig:
    """The `fusion` ranker: a logistic regression over its members' ranks (retriever/models/learned_fusion.py)."""

    # Registered retrievers whose top `depth` are the candidates; trained ones come from this run.
    members: list[str] = field(default_factory=lambda: [
        "bm25", "usage", "locality", "neighbors", "neighbors-tactic", "cfr-conventional"])
    depth: int = 100
    split: str | None = None  # queries it is fitted on (None: val_split); never a test split
    # statement: one query per traced tactic as recorded (for mathlib-src: the theorem's
    # statement); tactic: statement-level proofs split into tactic-level steps first
    # (prover/data/tactic_steps.py), states nearer the mid-proof ones search asks about.
    granularity: str = "statement"
    max_queries: int | None = None  # a seeded subset of them (None: all)
    l2: float = 1e-3
    folds: int = 5  # cross-validation over the fitting queries, reported in summary.json (1: none)


@dataclass
class RetrieverTrainConfig(TrainRunConfig):
    run_dir: str = "runs/retriever"  # pretrain/, cfr/, car/, reprover/ and the index live here
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    cfr: CFRConfig = field(default_factory=CFRConfig)
    car: CARConfig = field(default_factory=CARConfig)
    reprover: ReProverConfig = field(default_factory=ReProverConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)


@dataclass
class RetrieverConfig:
    """Which retriever, with what k: the one retriever choice of retrieval evaluation, proof
    search, the service, the generator benchmark and the demo (retriever/registry.py builds it)."""

    name: str = "bm25"
    bm25: BM25Config = field(default_factory=BM25Config)
    informal: InformalConfig = field(default_factory=InformalConfig)  # retriever `informal`
    # Trained retrievers (cfr, cfr+car, reprover, hybrid) are read from the run folder of a
    # retriever training config (configs/retriever/*.yaml); run_dir overrides the one it names.
    models: str | None = None
    run_dir: str | None = None
    device: str = "auto"
    # key=value overrides of that training config's inference settings, e.g. ["car.k1=20"].
    model_overrides: list[str] = field(default_factory=list)
    # The `usage` baseline counts the proofs of this training split (under data.root); None:
    # the evaluated split's strategy's train split, else random/train (retriever/registry.py).
    usage_split: str | None = None  # (`neighbors` counts the same proofs)
    seed: int = 0  # the `random` baseline's seed
    neighbors_k: int = 5  # training states that vote in `neighbors` (retriever/baselines/neighbors.py)
    k: int = 10  # premises retrieved per state (a search's; evaluation ranks eval.ks)
    # Proof search: premises only from those accessible where the theorem is (its imports and
    # what comes before it in its file), as ReProver ranks them. A state whose place cannot be
    # found in the corpus then gets no premises instead of the whole corpus's best.
    accessible_only: bool = False
    # Dataset folder whose corpus.jsonl is searched (proof search). null there: the corpus of the
    # project the run is on (env.repl.project; prove-sorries: the project), built from its
    # source into corpus_cache once per project state (prover data corpus).
    corpus: str | None = None
    corpus_cache: str = "runs/corpora"
    # Dataset whose training proofs the priors (usage, neighbors, the fusion's) count, matched to
    # the corpus by premise name. null: the evaluated dataset's (data.root), else the corpus folder's.
    training_data: str | None = None
    # `file::name` of the theorems being proved or scored: the priors count no proof of theirs,
    # so a search never sees its own proofs (a benchmark fills it; a config leaves it empty).
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for key in ("k", "neighbors_k"):
            if getattr(self, key) < 1:
                raise ValueError(f"retriever.{key} must be at least 1, got {getattr(self, key)}")


# The retrieval evaluation's schemas (`prover retriever eval`, benchmarks/retrieval.py).


@dataclass
class EvalConfig:
    ks: list[int] = field(default_factory=lambda: [1, 5, 10, 20, 50])
    rankings_k: int = 100  # premises kept per query in the rankings file; MRR is over these
    batch_size: int = 64
    out_dir: str = "runs/eval"

    def __post_init__(self) -> None:
        if not self.ks or min(self.ks) < 1 or self.rankings_k < 1 or self.batch_size < 1:
            raise ValueError(f"eval.ks must be positive numbers, eval.rankings_k and eval.batch_size at least 1; "
                             f"got ks {list(self.ks)}, rankings_k {self.rankings_k}, batch_size {self.batch_size}")


@dataclass
class RetrievalEvalConfig:
    data: DataConfig = field(default_factory=DataConfig)
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)


@dataclass
class RetrievalBenchmarkConfig:
    data: DataConfig = field(default_factory=DataConfig)
    retrievers: list[str] = field(default_factory=lambda: ["bm25-plain", "bm25"])
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    results_dir: str = "benchmarks/results"
    # Appended to the results file name, so two model sizes on one split keep separate files.
    results_tag: str = ""
    latency_queries: int = 100  # queries timed one at a time for p50/p95
    robustness: bool = True  # re-evaluate with shuffled / 20%-dropped hypotheses
