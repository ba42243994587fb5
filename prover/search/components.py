"""Recipes for the parts of a search: built where they run (in a Ray actor, or in process).

A spec (the retriever choice, a RetrieverConfig; the GeneratorSettings) is small and picklable;
`premise_source(choice)` and `tactic_source(settings)` load the corpus, the retriever or the generator in
the process that will use it, so a model is never shipped between processes and a worker that
only runs searches never loads one. `EnvSettings.make(theorem)` opens nothing: the search opens and
closes the env it is handed.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from prover.data.theorem import Theorem
from prover.env.base import ENV_LEANDOJO, ENV_REPL, ENV_REPLAY, ProofEnv
from prover.env.lean_version import ENV_AUTO
from prover.env.leandojo_env import lean_toolchain_available
from prover.search.settings import EnvSettings, GeneratorSettings, as_object
from prover.search.sources import GeneratorTactics, NoPremises, PremiseSource, RetrieverPremises, TacticSource
from retriever.settings import RetrieverConfig

log = logging.getLogger(__name__)

NO_RETRIEVER = "none"
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")  # owner/name, as the hub spells a model
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
    if toolchain is None and cfg.theorems.source == MINIF2F and not cfg.env.repl.project:
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


def premise_source(choice: RetrieverConfig) -> PremiseSource:
    """The premises of `choice` (a registered retriever over the corpus of a dataset folder,
    `k` per state), built in the process that calls it."""
    if choice.name == NO_RETRIEVER:
        return NoPremises()
    if not choice.corpus:
        raise ValueError(f"retriever {choice.name} needs a corpus: set retriever.corpus "
                         f"(or --corpus) to a dataset folder")
    from prover.data.dataset import Dataset
    from retriever.registry import build_retriever
    corpus = Dataset(choice.corpus).corpus()
    retriever = build_retriever(choice.name, corpus, choice)
    log.info("retriever %s over %d premises of %s", choice.name, len(corpus), choice.corpus)
    return RetrieverPremises(retriever, choice.k, choice.accessible_only)


def tactic_source(settings: GeneratorSettings | Any) -> TacticSource:
    """The trained generator of `settings`, loaded in the process that calls it, generating as
    they say (its tactic neighbours leave `settings.exclude` out). Tests hand the benchmark a
    double instead of settings: anything with `build()` and `describe()`."""
    if not isinstance(settings, GeneratorSettings):
        return settings.build()
    if not settings.model:
        raise ValueError("no tactic generator: set generator.model (or --generator) to a trained "
                         "generator folder (prover generator train writes …/generator/model)")
    from generator.model import TacticGenerator
    from prover.utils.device import pick_device
    gen = TacticGenerator.load(settings.model, device=pick_device(settings.device), generate=settings,
                               input_format=settings.input_format)
    if gen.neighbors is not None and settings.exclude:
        gen.neighbors.exclude(settings.exclude)
    return GeneratorTactics(gen)


def check_sources(choice: RetrieverConfig, settings: GeneratorSettings | Any) -> None:
    """What the actors will load, checked here first, one line each: before a results folder
    is written and Ray starts, a missing generator, a corpus that does not parse or a retriever
    not trained is named at once, not in an actor's traceback a minute later."""
    from prover.data.errors import UserInputError
    if isinstance(settings, GeneratorSettings):
        if not settings.model:
            raise UserInputError("no tactic generator: set generator.model (or --generator) to a trained "
                                 "generator folder (prover generator train writes …/generator/model)")
        require_generator(settings.model)
    if choice.name == NO_RETRIEVER or not choice.corpus:
        return  # premise_source says what is missing
    from prover.data.dataset import Dataset
    from retriever.registry import require_trained
    Dataset(choice.corpus, source="--corpus").corpus()  # parsed once here: a bad line is named
    require_trained(choice.name, choice)


def require_generator(model: str) -> None:
    """A local generator folder with its config.json, or a name shaped like a hub id (the hub
    is asked when the model loads); anything else refused in one line."""
    from prover.data.errors import UserInputError
    if (Path(model) / "config.json").exists() or (not Path(model).exists() and _HUB_ID.fullmatch(model)):
        return
    raise UserInputError(f"no trained generator at {model} (expected config.json there; "
                         f"prover generator train writes …/generator/model)")


def refuse_bare_generator(cfg: Any, retrievers: Sequence[str]) -> None:
    """A model trained without premises gets no retriever row: refused in one line, naming the
    generator to use instead, before Ray starts and before any run.json is written."""
    from prover.data.errors import UserInputError
    g = cfg.generator
    if not g.model or not isinstance(g.model, str):
        return
    from generator.input_format import refuse_premises
    try:
        refuse_premises(g.model, list(retrievers), g.get("input_format") if hasattr(g, "get") else
                        getattr(g, "input_format", None))
    except ValueError as e:
        raise UserInputError(str(e)) from None


def describe(settings: GeneratorSettings | Any) -> str:
    if not isinstance(settings, GeneratorSettings):
        return settings.describe()
    return f"{settings.model} ({settings.method}, {settings.num_tactics})"


def retriever_spec(cfg: Any, exclude: Sequence[str] = ()) -> RetrieverConfig:
    """A benchmark config's `retriever` section as its dataclass; `exclude`: the theorems to be proved."""
    choice = as_object(cfg.retriever)
    if not isinstance(choice, RetrieverConfig):
        choice = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(RetrieverConfig), choice))
    return replace(choice, exclude=tuple(exclude))


def generator_spec(cfg: Any, exclude: Sequence[str] = ()) -> GeneratorSettings:
    """A benchmark config's `generator` section as its dataclass; `exclude`: the theorems to be proved."""
    g = as_object(cfg.generator)
    if not isinstance(g, GeneratorSettings):
        g = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(GeneratorSettings), g))
    return replace(g, exclude=tuple(exclude))


def env_spec(cfg: Any) -> EnvSettings:
    """The benchmark config's `env` section as its dataclass: what workers open envs from."""
    return OmegaConf.to_object(cfg.env) if OmegaConf.is_config(cfg.env) else cfg.env
