"""Structured configs (OmegaConf): a YAML file per experiment, dotlist overrides on every command.

The dataclasses are the schema: a typo'd key or a string where a number belongs fails at
load time with OmegaConf's message, not an hour into a run.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from typing import Any

from omegaconf import OmegaConf

from prover.data.demo import DEMO
from retriever.bm25 import BM25Config

DEMO_DATA = DEMO  # built on first use; see prover.data.demo


@dataclass
class DataConfig:
    # A LeanDojo-format dataset: corpus.jsonl[.gz] and <strategy>/{train,val,test}.json[.gz].
    root: str = DEMO_DATA
    split: str = "random/test"
    max_state_chars: int = 50_000
    # raise: the first bad record stops the run with its location; skip: count and go on.
    on_error: str = "raise"


@dataclass
class RetrieverConfig:
    name: str = "bm25"
    bm25: BM25Config = field(default_factory=BM25Config)
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
    neighbors_k: int = 5  # training states that vote in `neighbors` (retriever/neighbors.py)


@dataclass
class EvalConfig:
    ks: list[int] = field(default_factory=lambda: [1, 5, 10, 20, 50])
    rankings_k: int = 100  # premises kept per query in the rankings file; MRR is over these
    batch_size: int = 64
    out_dir: str = "runs/eval"


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


class ConfigError(ValueError):
    """A config file or override the schema rejects, said in one line about the user's input."""


def check_overrides(overrides: list[str]) -> None:
    """Every override is `key=value`: a bare word is a mistake, not a key set to null."""
    for o in overrides:
        if "=" not in o or o.startswith("=") or o.startswith("-"):
            raise ConfigError(f"{o!r} is not an override: overrides are key=value, e.g. data.split=random/val")


def _one_line(e: Exception, cfg: Any, source: str) -> ConfigError:
    """OmegaConf's multi-line message as one line naming the key, and for a typo the keys there."""
    from omegaconf.errors import ConfigKeyError
    key = getattr(e, "full_key", None) or "?"
    if isinstance(e, ConfigKeyError):
        parent = key.rpartition(".")[0]
        node = OmegaConf.select(cfg, parent) if parent else cfg
        known = sorted(node.keys()) if OmegaConf.is_dict(node) else []
        close = difflib.get_close_matches(key.rpartition(".")[2], known, n=1)
        hint = (f"; did you mean {(parent + '.' if parent else '') + close[0]!r}?" if close else "")
        return ConfigError(f"unknown config key {key!r} in {source}{hint} "
                           f"(keys{' under ' + parent if parent else ''}: {', '.join(known)})")
    return ConfigError(f"config key {key!r} in {source}: {str(e).splitlines()[0]}")


def load_config(schema: type, path: str | None = None, overrides: list[str] | None = None) -> Any:
    """Schema defaults, then the YAML file, then `key=value` overrides, in that order.
    A key the schema lacks or a value of the wrong type raises ConfigError, in one line."""
    from omegaconf.errors import OmegaConfBaseException
    overrides = list(overrides or [])
    check_overrides(overrides)
    cfg = OmegaConf.structured(schema)
    if path:
        if not os.path.exists(path):
            raise FileNotFoundError(f"config file {path} not found")
        try:
            cfg = OmegaConf.merge(cfg, OmegaConf.load(path))
        except OmegaConfBaseException as e:
            raise _one_line(e, cfg, path) from None
    if overrides:
        try:
            cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))
        except OmegaConfBaseException as e:
            raise _one_line(e, cfg, "the overrides") from None
    return cfg


def to_plain(cfg: Any) -> dict:
    return OmegaConf.to_container(cfg, resolve=True)
