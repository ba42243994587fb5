"""Recipes for the parts of a search: built where they run (in a Ray actor, or in process).

A spec is small and picklable; `build()` loads the corpus, the retriever or the generator in
the process that will use it, so a model is never shipped between processes and a worker that
only runs searches never loads one. `EnvSettings.make(theorem)` opens nothing: the search opens and
closes the env it is handed.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from prover.data.theorem import Theorem
from prover.env.base import ENV_LEANDOJO, ENV_REPL, ENV_REPLAY, ProofEnv
from prover.env.lean_version import ENV_AUTO
from prover.env.leandojo_env import lean_toolchain_available
from prover.search.settings import EnvSettings
from prover.search.sources import GeneratorTactics, NoPremises, PremiseSource, RetrieverPremises, TacticSource

log = logging.getLogger(__name__)

NO_RETRIEVER = "none"
ENVS = (ENV_LEANDOJO, ENV_REPL, ENV_REPLAY)


class EnvUnavailableError(RuntimeError):
    """The requested environment cannot run on this machine."""


def resolve_env(cfg: Any) -> str:
    """Settle `env.name` of a benchmark config (`auto` included) from the Lean version: the
    project's lean-toolchain (env.repl.project), else the one MiniF2F's records pin. Raises
    EnvChoiceError in one line (lean-dojo on Lean v4.12 or later, say)."""
    from prover.env.lean_version import choose_env, read_toolchain
    from prover.search.theorems import MINIF2F, minif2f_toolchain
    toolchain = read_toolchain(cfg.env.repl.project)
    if toolchain is None and cfg.theorems.source == MINIF2F:
        toolchain = minif2f_toolchain(cfg.theorems.minif2f_path)
    if cfg.env.name != ENV_REPLAY:
        cfg.env.name = choose_env(cfg.env.name, toolchain)
    return cfg.env.name


def require_env(name: str) -> None:
    """Refuse to start a run whose environment cannot work here, saying what to do instead."""
    if name not in ENVS:
        raise ValueError(f"unknown env {name!r}: expected one of {', '.join(ENVS + (ENV_AUTO,))}")
    if name == ENV_REPLAY:
        return
    if not (lean_toolchain_available() if name == ENV_LEANDOJO else lean_toolchain_available(need_lean=False)):
        raise EnvUnavailableError(
            f"--env {name} needs a Lean 4 toolchain (lake and lean on PATH, or elan), and none "
            "was found on this machine. Install elan (https://github.com/leanprover/elan) to prove "
            "theorems in Lean, or use --env replay to exercise search, Ray and fault handling on "
            "traced proofs (a simulator: its proof rate is not pass@1).")


@dataclass
class RetrieverSpec:
    """A registered retriever over the corpus of a dataset folder, `k` premises per state."""

    name: str = NO_RETRIEVER
    corpus: str | None = None  # dataset folder holding corpus.jsonl[.gz]
    k: int = 10
    cfg: dict = field(default_factory=dict)  # the `retriever:` section the registry reads
    # `file::name` of the theorems being proved: the priors (usage, neighbors, the fusion's)
    # count no proof of theirs, so a search never sees its own proofs.
    exclude: tuple[str, ...] = ()
    training_data: str | None = None  # whose training proofs the priors count (None: the corpus folder's)

    def build(self) -> PremiseSource:
        if self.name == NO_RETRIEVER:
            return NoPremises()
        if not self.corpus:
            raise ValueError(f"retriever {self.name} needs a corpus: set retriever.corpus "
                             f"(or --corpus) to a dataset folder")
        from retriever.settings import RetrieverConfig
        from prover.data.dataset import Dataset
        from retriever.registry import build_retriever
        corpus = Dataset(self.corpus).corpus()
        # The registry reads a typed `retriever:` section (bm25 settings as a BM25Config).
        section = OmegaConf.merge(OmegaConf.structured(RetrieverConfig), {**self.cfg, "name": self.name})
        # `data.root`: the priors (usage, neighbors, fusion) count the training proofs of this
        # dataset (retriever.usage_split, else random/train).
        retriever = build_retriever(self.name, corpus, OmegaConf.create(
            {"retriever": section, "data": {"root": self.training_data or self.corpus,
                                            "exclude": list(self.exclude)}}))
        log.info("retriever %s over %d premises of %s", self.name, len(corpus), self.corpus)
        return RetrieverPremises(retriever, self.k)

    def describe(self) -> str:
        return self.name


@dataclass
class GeneratorSpec:
    model: str | None = None
    num_samples: int = 64
    method: str = "beam"
    temperature: float = 1.0
    batch_size: int = 16
    max_bytes: int | None = None
    device: str = "auto"
    exclude: tuple[str, ...] = ()  # theorems being proved: no tactic neighbour from their proofs
    instantiate: int = 0  # premises that fill the neighbours' templates (generator/instantiate.py)
    premise_bonus: float = 0.0  # nats for a suggestion naming a retrieved premise
    num_beams: int | None = None  # beam width (None: num_samples)

    def build(self) -> TacticSource:
        if not self.model:
            raise ValueError("no tactic generator: set generator.model (or --generator) to a trained "
                             "generator folder (prover generator train writes …/generator/model)")
        if not (Path(self.model) / "config.json").exists():
            raise FileNotFoundError(f"no trained generator at {self.model} (expected config.json there)")
        from generator.model import TacticGenerator
        from prover.utils.device import pick_device
        gen = TacticGenerator.load(self.model, device=pick_device(self.device))
        if gen.neighbors is not None and self.exclude:
            gen.neighbors.exclude(self.exclude)
        gen.instantiate = self.instantiate
        gen.premise_bonus = self.premise_bonus
        return GeneratorTactics(gen, self.num_samples, self.method, self.temperature,
                                self.batch_size, self.max_bytes, self.num_beams)

    def describe(self) -> str:
        return f"{self.model} ({self.method}, {self.num_samples})"


def retriever_spec(cfg: Any, exclude: Sequence[str] = ()) -> RetrieverSpec:
    """From a benchmark config's `retriever` section; `exclude`: the theorems to be proved."""
    r = cfg.retriever
    section = {"models": r.models, "run_dir": r.run_dir, "device": r.device,
               "bm25": OmegaConf.to_container(r.bm25) if OmegaConf.is_config(r.bm25) else r.bm25,
               "model_overrides": list(r.get("model_overrides") or [])}
    return RetrieverSpec(r.name, r.corpus, r.k, section, tuple(exclude), r.get("training_data"))


def generator_spec(cfg: Any, exclude: Sequence[str] = ()) -> GeneratorSpec:
    g = cfg.generator
    return GeneratorSpec(g.model, g.num_samples or cfg.search.num_tactics, g.method, g.temperature, g.batch_size,
                         g.max_bytes, g.device, tuple(exclude), g.get("instantiate", 0),
                         g.get("premise_bonus", 0.0), g.get("num_beams", None))


def env_spec(cfg: Any) -> EnvSettings:
    """The benchmark config's `env` section as its dataclass: what workers open envs from."""
    return OmegaConf.to_object(cfg.env) if OmegaConf.is_config(cfg.env) else cfg.env
