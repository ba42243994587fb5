"""Named retrievers, so configs and the benchmark can say `bm25` or `cfr+car` and get one.

A factory takes the corpus and the calling command's config. Lexical retrievers read
`retriever.bm25`; trained ones read the training config named by `retriever.models` (or the
config itself, when a training command builds a first stage), so evaluation always loads a
model with the sizes and lengths it was trained with.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from prover.data.corpus import Corpus
from retriever.base import Retriever
from retriever.bm25 import BM25Config, BM25Retriever


def _bm25_cfg(cfg: Any) -> BM25Config:
    node = OmegaConf.select(cfg, "retriever.bm25") if cfg is not None else None
    return OmegaConf.to_object(node) if node is not None else BM25Config()


def _bm25(corpus: Corpus, cfg: Any) -> Retriever:
    return BM25Retriever(corpus, replace(_bm25_cfg(cfg), tokenizer="lean"))


def _bm25_plain(corpus: Corpus, cfg: Any) -> Retriever:
    # The sanity anchor: name + code, whitespace/bracket tokens.
    return BM25Retriever(corpus, replace(_bm25_cfg(cfg), tokenizer="plain", fields=["name", "code"]))


def training_config(cfg: Any) -> Any:
    """The retriever training config whose run folder holds the trained models, with the
    benchmark's `retriever.run_dir`, `device` and `model_overrides` applied to it."""
    if cfg is not None and OmegaConf.select(cfg, "cfr") is not None:
        return cfg  # already a training config (train-car building its first stage)
    from prover.config import load_config
    from retriever.settings import RetrieverTrainConfig
    def setting(key: str) -> Any:
        return OmegaConf.select(cfg, f"retriever.{key}") if cfg is not None else None

    overrides = [f"run_dir={setting('run_dir')}"] if setting("run_dir") else []
    if setting("device"):
        overrides.append(f"device={setting('device')}")
    return load_config(RetrieverTrainConfig, setting("models"), overrides + list(setting("model_overrides") or []))


def _model_dir(path: Path, what: str, command: str) -> Path:
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no trained {what} at {path}: run `prover retriever {command}` "
                                f"(or point retriever.models / retriever.run_dir at the right run)")
    return path


def _cfr(similarity: str) -> Callable[[Corpus, Any], Retriever]:
    def build(corpus: Corpus, cfg: Any) -> Retriever:
        from retriever.cfr import CFRRetriever
        from retriever.train_cfr import cfr_config
        tc = training_config(cfg)
        sub = "cfr" if similarity == "fine" else "cfr-conventional"
        model = _model_dir(Path(tc.run_dir) / sub / "model", f"CFR ({similarity})", "train-cfr")
        index = Path(tc.run_dir) / sub / "index"
        return CFRRetriever(corpus, model, replace(cfr_config(tc), similarity=similarity), tc.device,
                            index_path=index if index.exists() else None)
    return build


def _cfr_car(first_stage: str, weight: float | None) -> Callable[[Corpus, Any], Retriever]:
    """`first_stage`'s top k1 re-ranked by the CAR trained on its negatives, fused with the
    first stage's scores by `car.first_stage_weight` (weight None) or in CAR's order alone
    (weight 0)."""
    def build(corpus: Corpus, cfg: Any) -> Retriever:
        from retriever.car import RerankRetriever
        from retriever.train_car import car_run_dir
        from prover.utils.training import pick_device
        tc = training_config(cfg)
        car = _model_dir(car_run_dir(tc.run_dir, first_stage) / "model", f"CAR over {first_stage}",
                         f"train-car --first-stage {first_stage}")
        w = tc.car.first_stage_weight if weight is None else weight
        rr = RerankRetriever.load(REGISTRY[first_stage](corpus, tc), car, pick_device(tc.device),
                                  tc.car.k1, tc.car.k2, w)
        trained_over = rr.scorer.meta.get("first_stage", first_stage)
        if trained_over != first_stage:
            raise ValueError(f"the CAR model at {car} was trained over {trained_over}, not {first_stage}")
        if weight is not None:
            rr.name += "-only"
        return rr
    return build


def _reprover(corpus: Corpus, cfg: Any) -> Retriever:
    from retriever.reprover import build_reprover
    return build_reprover(corpus, training_config(cfg))


def _hybrid(corpus: Corpus, cfg: Any) -> Retriever:
    from retriever.hybrid import HybridRetriever
    return HybridRetriever([_bm25(corpus, cfg), _cfr("fine")(corpus, cfg)])


REGISTRY: dict[str, Callable[[Corpus, Any], Retriever]] = {
    "bm25": _bm25,
    "bm25-plain": _bm25_plain,
    "cfr": _cfr("fine"),
    "cfr-conventional": _cfr("conventional"),
    "cfr+car": _cfr_car("cfr", None),
    "cfr+car-only": _cfr_car("cfr", 0.0),
    "cfr-conventional+car": _cfr_car("cfr-conventional", None),
    "cfr-conventional+car-only": _cfr_car("cfr-conventional", 0.0),
    "reprover": _reprover,
    "hybrid": _hybrid,
}


def build_retriever(name: str, corpus: Corpus, cfg: Any = None) -> Retriever:
    if name not in REGISTRY:
        raise ValueError(f"unknown retriever {name!r}; registered: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name](corpus, cfg)
