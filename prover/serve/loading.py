"""From a corpus folder and a retriever run folder to the named retrievers the service answers with.

`retriever.run_dir` (`--index PATH`) names a retriever run folder, the `run_dir` of
`configs/retriever/*.yaml` (`cfr/model`, `cfr/index` from `prover retriever index`, `car/model`),
or the `cfr/index` folder inside one. Retrievers are built through the registry from the
config's `retriever` (the one retriever-choice type), so the service ranks exactly as
`prover retriever eval` does; what the registry would load twice is shared instead (hybrid
reuses the served bm25 and cfr; one CAR re-ranks every first stage).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.errors import UserInputError
from retriever.base import Retriever
from retriever.models.faiss_index import INDEX_FILE
from retriever.settings import RetrieverConfig

log = logging.getLogger(__name__)

RERANK_SUFFIX = "+car"
TRAINED = {"cfr", "cfr-conventional", "reprover", "hybrid"}
CFR_SUBDIRS = {"cfr": "cfr", "cfr-conventional": "cfr-conventional", "hybrid": "cfr"}


@dataclass
class Loaded:
    """One consistent generation of what the service searches: swapped whole on reload."""

    corpus: Corpus
    corpus_path: str
    index_path: str | None
    first_stages: dict[str, Retriever]
    rerankers: dict[str, Retriever] = field(default_factory=dict)
    generation: int = 0
    load_seconds: float = 0.0
    loaded_at: float = field(default_factory=time.time)

    def get(self, name: str, rerank: bool) -> Retriever:
        return self.rerankers[name] if rerank else self.first_stages[name]


def run_dir_of(index: str | Path) -> Path:
    """The retriever run folder `index` names: itself, or the run folder of a `<run>/cfr/index`."""
    path = Path(index)
    if not path.exists():
        raise FileNotFoundError(f"--index {path} does not exist (expected a retriever run folder "
                                f"such as runs/retriever-tiny, or its cfr/index folder)")
    if (path / INDEX_FILE).exists():
        if path.name != "index" or path.parent.name not in ("cfr", "cfr-conventional"):
            raise ValueError(f"{path} is an index folder outside a run folder; pass the retriever "
                             f"run folder (its index lives at <run_dir>/cfr/index)")
        return path.parent.parent
    return path


def load_corpus(corpus_dir: str | Path, render_to_additive: bool = False) -> Corpus:
    return Dataset(corpus_dir, source="--corpus", render_to_additive=render_to_additive).corpus()


def render_setting(choice: RetrieverConfig) -> bool:
    """`data.render_to_additive` of the run's training config (`retriever.models`): the service
    reads premise texts as the retrievers it serves were built to (and `/premise` shows them so)."""
    if not choice.models:
        from prover.config import DataConfig
        return DataConfig().render_to_additive
    from retriever.registry import scope_of, training_config
    return bool(training_config(scope_of(choice)).data.render_to_additive)


def served_choice(cfg: Any, run_dir: Path | None, corpus_dir: str | Path) -> RetrieverConfig:
    """The config's `retriever`, as the registry reads it, with the run folder and corpus this
    load uses (a reload may name others): the one choice every served retriever is built from."""
    choice = cfg.retriever
    if OmegaConf.is_config(choice):  # the registry takes the dataclass, not a DictConfig
        choice = OmegaConf.to_object(choice)
    return replace(choice, run_dir=str(run_dir) if run_dir else None, corpus=str(corpus_dir))


def _check_trained(registry_cfg: RetrieverConfig, names: list[str], require_index: bool) -> None:
    """Refuse to start when a served retriever lacks a trained stage (or, with require_index,
    its saved index), naming the first missing one and the command that makes it."""
    from retriever.registry import missing_training
    with_index = [n for n in names if n in CFR_SUBDIRS]
    if with_index and registry_cfg.run_dir is None:
        raise UserInputError(f"retrievers {', '.join(sorted(n for n in names if n in TRAINED))} need "
                             f"trained models: pass --index <retriever run folder>")
    for name in names:
        if RERANK_SUFFIX in name:
            continue  # not servable as a first stage: build_first_stages says so
        index = require_index and name in with_index
        message = missing_training(name, registry_cfg, index=index)
        if message:
            hint = "or pass --index a trained run folder" + (
                "; or set require_index=false to encode the corpus at startup" if index else "")
            raise UserInputError(f"{message} ({hint})")


def build_first_stages(names: list[str], corpus: Corpus, registry_cfg: RetrieverConfig) -> dict[str, Retriever]:
    from retriever.baselines.hybrid import HybridRetriever
    from retriever.registry import build_retriever, is_registered, registered_names
    built: dict[str, Retriever] = {}

    def get(name: str) -> Retriever:
        if name not in built:
            if name == "hybrid":  # the registry's hybrid, made of the members already served
                built[name] = HybridRetriever([get("bm25"), get("cfr")])
            else:
                built[name] = build_retriever(name, corpus, registry_cfg)
        return built[name]

    for name in names:
        if RERANK_SUFFIX in name or not is_registered(name):
            raise ValueError(f"cannot serve retriever {name!r}: list first stages from "
                             f"{', '.join(sorted(n for n in registered_names() if RERANK_SUFFIX not in n))}; "
                             f"re-ranking is `rerank: true` in a request")
        get(name)
    return {name: built[name] for name in names}


def load_car_setting(cfg: Any) -> bool | None:
    """`load_car`, or the old key `rerank` it replaced (said once, with what it means now)."""
    old = OmegaConf.select(cfg, "rerank") if OmegaConf.is_config(cfg) else getattr(cfg, "rerank", None)
    new = OmegaConf.select(cfg, "load_car") if OmegaConf.is_config(cfg) else getattr(cfg, "load_car", None)
    if old is not None:
        log.warning("serve config key `rerank` is now `load_car` (it loads CAR so that requests may ask "
                    "for re-ranking); read as load_car=%s", str(bool(old)).lower())
        return new if new is not None else bool(old)
    return new


def car_dir_of(run_dir: Path | None, registry_cfg: RetrieverConfig) -> Path | None:
    """The CAR model folder a served run would load: the one trained over the training
    config's first stage (car.first_stage), which re-ranks every first stage."""
    if run_dir is None:
        return None
    from retriever.models.car import car_run_dir
    from retriever.registry import training_config
    return car_run_dir(run_dir, training_config(registry_cfg).car.first_stage) / "model"


def build_rerankers(first_stages: dict[str, Retriever], run_dir: Path | None, registry_cfg: RetrieverConfig,
                    device: str) -> dict[str, Retriever]:
    """CFR+CAR as the registry builds it (same k1), and CAR over every other first stage."""
    from retriever.models.car import CARScorer, RerankRetriever
    from retriever.registry import training_config
    from prover.utils.device import pick_device
    tc = training_config(registry_cfg)
    car_dir = car_dir_of(run_dir, registry_cfg)
    if car_dir is None or not (car_dir / "config.json").exists():
        raise UserInputError(f"no trained CAR at {car_dir}: run `prover retriever train-car`, or "
                             f"set load_car=false to serve without re-ranking")
    scorer = CARScorer.from_pretrained(car_dir, pick_device(device))
    return {name: RerankRetriever(first, scorer, tc.car.k1, tc.car.first_stage_weight)
            for name, first in first_stages.items()}


def load(cfg: Any, index: str | None = None, corpus: str | None = None, generation: int = 0) -> Loaded:
    """Read the corpus and build every served retriever; `index`/`corpus` default to the config's
    (retriever.run_dir, retriever.corpus)."""
    index = index if index is not None else cfg.retriever.run_dir
    corpus_dir = corpus if corpus is not None else cfg.retriever.corpus
    if not corpus_dir:
        raise ValueError("no corpus: pass --corpus <LeanDojo dataset folder> (the one the index was built from)")
    t0 = time.perf_counter()
    run_dir = run_dir_of(index) if index else None
    names = list(cfg.retrievers)
    if not names:
        raise ValueError("no retrievers to serve: set retrievers (e.g. --retrievers cfr,bm25)")
    default = cfg.retriever.name
    if default and default not in names:
        raise ValueError(f"retriever.name {default!r} (the default retriever) is not among the served "
                         f"retrievers {names}")
    registry_cfg = served_choice(cfg, run_dir, corpus_dir)
    _check_trained(registry_cfg, names, cfg.require_index)
    c = load_corpus(corpus_dir, render_setting(registry_cfg))
    first = build_first_stages(names, c, registry_cfg)
    load_car = load_car_setting(cfg)
    if load_car is None:  # when the run folder has one
        car_dir = car_dir_of(run_dir, registry_cfg)
        load_car = bool(car_dir and (car_dir / "config.json").exists())
    rerankers = build_rerankers(first, run_dir, registry_cfg, registry_cfg.device) if load_car else {}
    seconds = time.perf_counter() - t0
    log.info("serving %s over %d premises of %s (index %s), loaded in %.1f s",
             ", ".join(names) + (" (+car)" if rerankers else ""), len(c), corpus_dir, run_dir, seconds)
    return Loaded(c, str(corpus_dir), str(run_dir) if run_dir else None, first, rerankers,
                  generation, round(seconds, 2))
