"""Structured configs of the proof-search benchmark (configs/search/*.yaml fill them in)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import OmegaConf

from prover.data.theorem import Theorem
from prover.env.base import ENV_LEANDOJO, ENV_REPL, ENV_REPLAY, ProofEnv
from prover.env.leandojo_env import LeanDojoConfig, LeanDojoEnv
from prover.env.repl_env import ReplEnv, ReplTarget, target_from_source
from prover.env.repl_session import ReplConfig, ReplSession, on_this_node
from prover.env.replay import ReplayConfig, ReplayEnv
from prover.utils.batching import BatchingConfig
from prover.search.best_first import SearchConfig
from generator.settings import GenerateConfig
from retriever.settings import RetrieverConfig


@dataclass
class TheoremsConfig:
    # "minif2f", a LeanDojo split file (.json / .json.gz), a dataset folder (with `split`),
    # or a theorem list (.jsonl, one {url, commit, file_path, full_name[, start]} per line).
    source: str = "minif2f"
    # minif2f: valid | test (null: both); a dataset folder: e.g. random/test.
    split: str | None = None
    # minif2f: a theorem list (what `prover data theorems` writes); default: read from the
    # miniF2F-lean4 checkout env.repl.project, else the data folder's minif2f/minif2f.json.
    minif2f_path: str | None = None
    cache: str = "runs/theorems"  # a checkout's theorem list, built once per state of it
    names: list[str] = field(default_factory=list)  # only these full names (empty: all)
    limit: int | None = None  # the first N (after `names`)
    # Only theorems with traced tactics (before `names` and `limit`): the replay env cannot open
    # the others, so a replay benchmark of real records leaves them out instead of failing them.
    traced_only: bool = False


@dataclass
class GeneratorSettings(GenerateConfig):
    """The search's generator: where the trained model is and where it runs; how it generates
    is the GenerateConfig it extends."""

    model: str | None = None  # trained generator folder (…/generator/model), or a hub id
    # How the model reads its input (generator/input_format.py): null, the model's own (its
    # input_config.json, or a published ReProver checkpoint's by hub id); project, reprover
    # or reprover-no-premises for a copy that says nothing.
    input_format: str | None = None
    device: str = "auto"
    # `file::name` of the theorems being proved: no tactic neighbour from their proofs (a
    # benchmark fills it; a config leaves it empty).
    exclude: tuple[str, ...] = ()


@dataclass
class EnvSettings:
    # auto: the project's lean-toolchain decides (repl from Lean v4.8.0-rc1, else leandojo);
    # repl: the Lean REPL through lean-interact; leandojo: lean-dojo's Dojo (Lean before v4.12);
    # replay: a simulator over traced proofs (never pass@1).
    name: str = "auto"
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    leandojo: LeanDojoConfig = field(default_factory=LeanDojoConfig)
    repl: ReplConfig = field(default_factory=ReplConfig)

    def session(self) -> ReplSession | None:
        """What one worker keeps across theorems: its Lean REPL (started on first use), from a
        REPL checkout on the worker's own node."""
        return ReplSession(on_this_node(self.repl)) if self.name == ENV_REPL else None

    def make(self, theorem: Theorem, target: ReplTarget | None = None,
             session: ReplSession | None = None) -> ProofEnv:
        """The env for one theorem (opens nothing: the search opens and closes it). The REPL env
        needs the worker's `session`, and opens `target` (MiniF2F's header and statement), or
        else the theorem as its source file in `repl.project` has it (a LeanDojo record)."""
        if self.name == ENV_REPLAY:
            return ReplayEnv(theorem, self.replay)
        if self.name == ENV_LEANDOJO:
            return LeanDojoEnv(theorem, self.leandojo)
        if self.name == ENV_REPL:
            if session is None:
                raise ValueError("the repl env runs on a worker's ReplSession: pass session=")
            return ReplEnv(target or target_from_source(theorem, self.repl.project), session)
        raise ValueError(f"env {self.name!r} cannot open a theorem: expected leandojo, repl or replay "
                         f"(auto is settled first, from the Lean version)")


@dataclass
class RayConfig:
    # null: $RAY_ADDRESS when set (a job submitted with `ray job submit`), else a new local
    # cluster. "auto" joins the cluster `ray start` last started on this machine.
    address: str | None = None
    # ProverWorker actors, one search at a time each. null: as many as the free CPUs hold (one
    # each), at most one per theorem (prover/search/placement.py); a number is refused in one line
    # when the cluster cannot place it.
    num_workers: int | None = None
    num_generators: int = 1  # GeneratorActors; workers are spread over them
    shared_retriever: bool = True  # False: every worker holds its own retriever copy
    # CPUs each actor asks Ray for. null: one when the cluster has room for every actor, else an
    # equal share of what it has.
    worker_cpus: float | None = None
    retriever_cpus: float | None = None
    generator_cpus: float | None = None
    # null: a share of one GPU when the cluster has GPUs (retriever and generators split it), else 0.
    retriever_gpus: float | None = None
    generator_gpus: float | None = None
    max_concurrency: int = 256  # concurrent requests an actor accepts (its batcher's supply)
    actor_restarts: int = 1  # times Ray restarts a dead retriever/generator actor
    max_attempts: int = 2  # tries per theorem when the worker running it dies
    # Seconds the actors may take to be placed and load their models before the run stops with
    # one line (a progress line every 10 s meanwhile).
    start_timeout_s: float = 300.0
    # Seconds the run waits for the next finished theorem before it stops with one line (what
    # is recorded stays; a rerun resumes). null: 3 x search.timeout_s + start_timeout_s; 0: none.
    stall_timeout_s: float | None = None
    # A local cluster only:
    local_num_cpus: int | None = None
    object_store_mb: int | None = None
    temp_dir: str | None = None


@dataclass
class SearchBenchmarkConfig:
    theorems: TheoremsConfig = field(default_factory=TheoremsConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    retriever: RetrieverConfig = field(default_factory=lambda: RetrieverConfig(name="none"))
    # Its num_tactics is the tactics tried per expansion: ReProver's 64 unless a config says.
    generator: GeneratorSettings = field(default_factory=lambda: GeneratorSettings(num_tactics=64))
    env: EnvSettings = field(default_factory=EnvSettings)
    batching: BatchingConfig = field(default_factory=BatchingConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    out_dir: str = "runs/search"
    run_name: str | None = None  # results folder under out_dir (default: <env>-<retriever>)
    progress: bool = True


def as_object(node: Any) -> Any:
    """A config node as its dataclass (runs the dataclass's own checks)."""
    return OmegaConf.to_object(node) if OmegaConf.is_config(node) else node


def run_name(cfg: Any) -> str:
    return cfg.run_name or f"{cfg.env.name}-{cfg.retriever.name}"


def resume_settings(cfg: Any) -> dict:
    """What a results file's records depend on: a rerun with other values must not append to it."""
    plain = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    out = {"theorems": {k: plain["theorems"][k] for k in ("source", "split")},
           **{k: plain[k] for k in ("search", "retriever", "generator", "env")}}
    # Keys the search's retriever section gained from the one retriever choice (issue 40) change
    # no search result at their defaults: left out, so runs from before still resume.
    # `exclude` is filled from the run's theorems, which are above.
    out["retriever"].pop("exclude", None)
    out["generator"].pop("exclude", None)
    if out["generator"].get("input_format") is None:
        out["generator"].pop("input_format", None)
    for key, default in (("usage_split", None), ("seed", 0), ("neighbors_k", 5), ("accessible_only", False)):
        if out["retriever"].get(key, default) == default:
            out["retriever"].pop(key, None)
    # Where and how fast models run changes no result: a run may resume on other hardware.
    for section, key in (("generator", "device"), ("generator", "batch_size"), ("retriever", "device")):
        out[section].pop(key, None)
    return out
