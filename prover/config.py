"""Structured configs (OmegaConf): a YAML file per experiment, dotlist overrides on every command.

The dataclasses are the schema: a typo'd key or a string where a number belongs fails at
load time with OmegaConf's message, not an hour into a run. A YAML file may start from another
one, `extends: other.yaml` (a path relative to it): its keys are laid over that file's, so an
optional part (CAR's recipe over `cpu.yaml`) lives in a file of its own instead of a copy.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from typing import Any

from omegaconf import OmegaConf

from prover.data.demo import DEMO
from prover.data.location import data_path

DEMO_DATA = DEMO  # built on first use; see prover.data.demo


def _register_resolver(name: str, fn: Any) -> None:
    """OmegaConf 2.4 renamed `register_new_resolver` to `register_resolver` (2.3's
    `register_resolver` is the old, different API): the one this version has."""
    import inspect
    if "annotation_validation" in inspect.signature(OmegaConf.register_resolver).parameters:
        OmegaConf.register_resolver(name, fn, replace=True)
    else:
        OmegaConf.register_new_resolver(name, fn, replace=True)


# `${data:mathlib-src}`: a dataset in the data folder ($PROVER_DATA, else the per-user one).
_register_resolver("data", data_path)


@dataclass
class DataConfig:
    # A LeanDojo-format dataset: corpus.jsonl[.gz] and <strategy>/{train,val,test}.json[.gz].
    root: str = DEMO_DATA
    split: str = "random/test"
    max_state_chars: int = 50_000
    # raise: the first bad record stops the run with its location; skip: count and go on.
    on_error: str = "raise"
    # A `@[to_additive]` twin's text rendered as its own (additive) statement, not its source's
    # (prover/data/additive_twins.py). Off: on leandojo-real/select it moved the fusion's R@10 by
    # [+0.0, +0.6] points, inside the noise (results/additive-twins-mathlib-src-leandojo-real-select.md).
    render_to_additive: bool = False


class ConfigError(ValueError):
    """A config file or override the schema rejects, said in one line about the user's input."""


def check_overrides(overrides: list[str]) -> None:
    """Every override is `key=value`: a bare word is a mistake, not a key set to null."""
    for o in overrides:
        if "=" not in o or o.startswith("=") or o.startswith("-"):
            raise ConfigError(f"{o!r} is not an override: overrides are key=value, e.g. data.split=random/val")


# Keys renamed: key -> (the sections it was read in, the section it moved to (None: the same),
# its name there). Tactics per expansion was search.num_tactics and generator.num_samples.
RENAMED = {"num_samples": (("", "generator", "generate", "generators"), None, "num_tactics"),
           "num_tactics": (("search",), "generator", "num_tactics"),
           # The generator benchmark's premises shown: its retriever section's k (a second k before).
           "k": (("",), "retriever", "k")}


# Keys removed: key -> (its section, why).
REMOVED = {"k2": ("car", "CAR's k2 was never read (a caller asks for its own k)")}


def _one_line(e: Exception, cfg: Any, source: str) -> ConfigError:
    """OmegaConf's multi-line message as one line naming the key, and for a typo the keys there."""
    from omegaconf.errors import ConfigKeyError
    key = getattr(e, "full_key", None) or "?"
    if isinstance(e, ConfigKeyError):
        parent, _, last = key.rpartition(".")
        if last in REMOVED and parent.rpartition(".")[2] == REMOVED[last][0]:
            return ConfigError(f"config key {key!r} in {source}: {REMOVED[last][1]}; remove it")
        if last in RENAMED and parent.rpartition(".")[2].split("[")[0] in RENAMED[last][0]:
            where, name = RENAMED[last][1], RENAMED[last][2]
            new = ".".join(filter(None, [parent.rpartition(".")[0] if where else parent, where, name]))
            return ConfigError(f"config key {key!r} in {source} is now {new!r} (tactics per state: one setting)")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        known = sorted(node.keys()) if OmegaConf.is_dict(node) else []
        close = difflib.get_close_matches(key.rpartition(".")[2], known, n=1)
        hint = (f"; did you mean {(parent + '.' if parent else '') + close[0]!r}?" if close else "")
        return ConfigError(f"unknown config key {key!r} in {source}{hint} "
                           f"(keys{' under ' + parent if parent else ''}: {', '.join(known)})")
    return ConfigError(f"config key {key!r} in {source}: {str(e).splitlines()[0]}")


def _read_yaml(path: str) -> Any:
    """The file parsed, or a ConfigError naming where YAML's parser stopped and why, in one line."""
    import yaml
    try:
        return OmegaConf.load(path)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f", line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        why = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"config file {path}{where}: not valid YAML ({why})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path}: not a text file (expected YAML)") from None


def load_yaml(path: str, _seen: tuple[str, ...] = ()) -> Any:
    """The YAML file at `path`, over the file its `extends:` key names (relative to it), recursively."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"config file {path} not found")
    if os.path.isdir(path):
        raise ConfigError(f"config file {path} is a folder: pass a YAML file in it")
    node = _read_yaml(path)
    base = node.pop("extends", None) if OmegaConf.is_dict(node) else None
    if base is None:
        return node
    base_path = os.path.normpath(os.path.join(os.path.dirname(path), str(base)))
    if os.path.abspath(base_path) in _seen:
        raise ConfigError(f"{path}: `extends: {base}` makes a cycle")
    if not os.path.exists(base_path):
        raise ConfigError(f"{path}: `extends: {base}` names {base_path}, which does not exist")
    return OmegaConf.merge(load_yaml(base_path, _seen + (os.path.abspath(path),)), node)


def load_config(schema: type, path: str | None = None, overrides: list[str] | None = None) -> Any:
    """Schema defaults, then the YAML file, then `key=value` overrides, in that order.
    A key the schema lacks or a value of the wrong type raises ConfigError, in one line."""
    from omegaconf.errors import OmegaConfBaseException
    overrides = list(overrides or [])
    check_overrides(overrides)
    cfg = OmegaConf.structured(schema)
    if path:
        file_cfg = load_yaml(path)
        try:
            cfg = OmegaConf.merge(cfg, file_cfg)
        except OmegaConfBaseException as e:
            raise _one_line(e, cfg, path) from None
    if overrides:
        try:
            cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))
        except OmegaConfBaseException as e:
            raise _one_line(e, cfg, "the overrides") from None
    return cfg


def to_plain(cfg: Any) -> dict:
    """The config as a JSON file holds it: a tuple field (RetrieverConfig.exclude) as a list,
    so a config read back from a results file compares equal to the one that wrote it."""
    def plain(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        return [plain(v) for v in x] if isinstance(x, (list, tuple)) else x
    return plain(OmegaConf.to_container(cfg, resolve=True))
