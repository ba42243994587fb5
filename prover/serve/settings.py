"""Config schema of the premise search service (`configs/serve/*.yaml`) and its load benchmark."""
from __future__ import annotations

from dataclasses import dataclass, field

from generator.settings import GenerateConfig
from prover.utils.batching import BatchingConfig
from retriever.settings import RetrieverConfig


@dataclass
class LimitsConfig:
    max_state_chars: int = 20_000
    max_k: int = 100  # (the default k is retriever.k)
    # Checked on Content-Length before the body is read, so a huge upload is refused cheaply;
    # the state limit is checked on the parsed text.
    max_body_bytes: int = 1_000_000


@dataclass
class GeneratorServeConfig(GenerateConfig):
    """A tactic generator answering LeanCopilot's `POST /generate` under `name`, generating as
    the GenerateConfig it extends says (num_tactics: tactics asked for per request, distinct
    ones returned best first; its batch_size is not read: a batch is what queued, below)."""

    name: str = "generator"  # what LeanCopilot's ExternalGenerator sends as `name`
    model: str | None = None  # a trained generator folder (<run_dir>/generator/model) or a hub id
    # Premises put before the state, as proof search does: `name` a served retriever (`cfr`,
    # `cfr+car`, ...), `k` how many. Only these two are read: the served retrievers are built
    # from the service's `retriever`. None: the state alone, as LeanCopilot's own generator sees it.
    premises: RetrieverConfig | None = None
    # The one batching type. States per model call: beam search decodes num_beams sequences per
    # state, so batches are smaller than the retrievers' (8). Requests waiting behind the running
    # batch: past max_queued a request gets 503 and Retry-After, which bounds the wait to about
    # (max_queued / max_batch_size + 1) batch times (0: no bound). A batch is what queued, no wait.
    batching: BatchingConfig = field(default_factory=lambda: BatchingConfig(8, 0.0, 8))


@dataclass
class RayServeConfig:
    address: str | None = None  # Ray cluster to join (None: RAY_ADDRESS, else a local Ray)
    num_replicas: int = 1
    num_cpus: float = 1.0  # per replica
    num_gpus: float = 0.0  # per replica
    max_ongoing_requests: int = 128  # per replica; the batcher queues what it cannot run yet


def _served_retriever() -> RetrieverConfig:
    # No name: the default is the first of `retrievers` (so `--retrievers bm25` alone works).
    return RetrieverConfig(name="")


@dataclass
class ServeConfig:
    # What every served retriever is built from (the registry's retriever choice):
    # - run_dir: a retriever run folder (`run_dir` of configs/retriever/*.yaml: cfr/model,
    #   cfr/index, car/model), or its cfr/index folder (`--index`). Only trained retrievers need it.
    # - corpus: the LeanDojo dataset folder (corpus.jsonl[.gz]) the index was built from (`--corpus`).
    # - models: the retriever training YAML the models came from (its car.k1, lengths); optional.
    # - device: where the models run.
    # - name: the retriever a request without one gets; it must be one of `retrievers`. Empty
    #   (the default): the first of `retrievers`.
    # - k: the premises a request without a k gets (at most limits.max_k).
    retriever: RetrieverConfig = field(default_factory=_served_retriever)
    # First-stage retrievers served (registry names); `rerank: true` in a request puts CAR on top.
    retrievers: list[str] = field(default_factory=lambda: ["cfr", "bm25"])
    # Load the CAR re-ranker of the run folder (<retriever.run_dir>/car/model, or car-<name> for
    # the config's car.first_stage), so that requests may ask for re-ranking: true requires it,
    # false never loads it, null (the default) loads it when the run folder has one. CAR is no
    # part of the shipped first stage (configs/retriever/cpu.yaml trains none).
    load_car: bool | None = None
    rerank: bool | None = None  # the old name of load_car, read with a warning
    # Tactic generators for LeanCopilot's POST /generate (none: /generate answers 404). The
    # served dense retrievers (cfr, cfr-conventional, reprover) answer POST /encode by name.
    generators: list[GeneratorServeConfig] = field(default_factory=list)
    require_index: bool = True  # refuse to start if cfr/index is missing instead of encoding the corpus
    threads: int | None = None  # torch intra-op threads (None: torch's default)
    host: str = "127.0.0.1"
    port: int = 8000
    # POST /admin/reload is disabled (404) while this is unset. Set it through the environment
    # (configs use ${oc.env:PROVER_SERVE_TOKEN,null}), not on a command line others can read.
    admin_token: str | None = None
    example_state: str = ("α : Type u_1\nβ : Type u_2\nf : α → β\nhf : Function.Injective f\n"
                          "a b : α\nh : f a = f b\n⊢ a = b")
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    # 32 states per model call, no wait for company, 256 searches of one retriever queued.
    batching: BatchingConfig = field(default_factory=lambda: BatchingConfig(32, 0.0, 256))
    ray: RayServeConfig = field(default_factory=RayServeConfig)
    log_level: str = "info"


@dataclass
class ServeBenchmarkConfig:
    serve: ServeConfig = field(default_factory=ServeConfig)
    # Each mode is a retriever name (POST /search for serve.retriever.k premises), `+car` meaning
    # the same first stage with rerank: true, or `generate:<name>` (POST /generate to that
    # served generator).
    modes: list[str] = field(default_factory=lambda: ["cfr", "cfr+car"])
    concurrency: list[int] = field(default_factory=lambda: [1, 8, 64])
    duration_s: float = 20.0  # measured time per (mode, concurrency)
    warmup_s: float = 2.0  # requests sent first and not counted
    states_split: str = "random/test"  # query states: first states of this split of serve.retriever.corpus
    n_states: int = 200
    request_timeout_s: float = 120.0
    startup_timeout_s: float = 600.0
    results_dir: str = "benchmarks/results"
    tag: str = "tiny"  # results go to <results_dir>/serve-<tag>.{json,md}
