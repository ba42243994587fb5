"""`prover generator build-data`: write the augmented (input, tactic) pairs of a split.

Each split becomes `<run_dir>/data/<strategy>-<split>.jsonl.gz` (one example per line: the
premises by name with their positive flags, the formatted input, the tactic) beside a
`.stats.json` with the pair count, the positive/negative mix and the input-length
distribution. With `data.granularity=tactic` the statement-level proofs are first split into
tactic-level pseudo steps (prover/data/tactic_steps.py); each row then says its `kind` and
whether its state is approximate, and the stats count the steps per kind. Training reads
these files; a file written under another config or seed is rebuilt, never silently reused.
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from prover.data.corpus import Corpus
from prover.data.dataset import Dataset
from prover.data.jsonio import iter_jsonl, load_json, write_json, write_jsonl
from prover.data.tactic_steps import STEPS_VERSION, tactic_level
from generator.augment import augment_examples
from generator.inputs import format_input
from generator.neighbors import training_neighbors

log = logging.getLogger(__name__)


def _augment_key(augment: Any) -> dict:
    key = OmegaConf.to_container(augment)
    if key.get("positive_rate", 1.0) == 1.0:  # the key of data built before the option stays as it was
        key.pop("positive_rate", None)
    return key


def _fingerprint(cfg: Any, split: str) -> str:
    data = OmegaConf.to_container(cfg.data, resolve=True)
    key = {"data": data, "split": split, "seed": cfg.seed,
           "augment": _augment_key(cfg.augment), "max_bytes": cfg.input.max_bytes}
    if cfg.input.premise_text != "full":  # the key of data built before the option stays as it was
        key["premise_text"] = cfg.input.premise_text
    if cfg.input.get("max_state_bytes") is not None:
        key["max_state_bytes"] = cfg.input.max_state_bytes
    if cfg.input.get("neighbor_tactics"):
        key["neighbor_tactics"] = cfg.input.neighbor_tactics
        key["neighbors"] = OmegaConf.to_container(cfg.neighbors, resolve=True)
    if data.get("granularity", "statement") == "statement":
        # The key as it was before granularity existed: statement-level data built then stays valid.
        data.pop("granularity", None)
    else:  # the target budget and the step rules decide which steps a tactic-level file holds
        key["max_target_bytes"] = cfg.input.max_target_bytes
        key["steps_version"] = STEPS_VERSION
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _granularity(cfg: Any) -> str:
    g = OmegaConf.select(cfg, "data.granularity", default="statement")
    if g not in ("statement", "tactic"):
        raise ValueError(f"data.granularity must be statement or tactic, not {g!r}")
    return g


def data_path(cfg: Any, split: str) -> Path:
    return Path(cfg.run_dir) / "data" / (split.replace("/", "-") + ".jsonl.gz")


def build_split(cfg: Any, split: str, ds: Dataset | None = None, corpus: Corpus | None = None,
                force: bool = False) -> tuple[Path, dict]:
    """Write (or find up to date) the augmented examples of `split`; return the file and its stats."""
    granularity = _granularity(cfg)
    path = data_path(cfg, split)
    stats_path = path.with_name(path.name.removesuffix(".jsonl.gz") + ".stats.json")
    fp = _fingerprint(cfg, split)
    if not force and path.exists() and stats_path.exists():
        stats = load_json(stats_path)
        if stats.get("fingerprint") == fp:
            log.info("%s: %d examples already built in %s", split, stats["examples"], path)
            return path, stats
        log.info("%s: config changed since %s was built; rebuilding", split, path)
    ds = ds or Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                       render_to_additive=cfg.data.render_to_additive)
    corpus = corpus or ds.corpus()
    theorems = ds.theorems(split)
    step_stats = None
    if granularity == "tactic":
        theorems, step_stats = tactic_level(theorems, cfg.input.max_target_bytes)
    neighbor_tactics = None
    if cfg.input.get("neighbor_tactics"):
        n = cfg.input.neighbor_tactics
        nb = training_neighbors(cfg)
        # Leave the example's own theorem out: at inference the theorem being proved is never
        # its own neighbour either (callers exclude it), so training sees what inference sees.
        neighbor_tactics = lambda state, key: nb.top_tactics(state, n, leave_out=key)  # noqa: E731
    examples, st = augment_examples(theorems, corpus, cfg.augment, cfg.seed,
                                    cfg.input.max_bytes, ds.skips, premise_text=cfg.input.premise_text,
                                    max_state_bytes=cfg.input.max_state_bytes,
                                    neighbor_tactics=neighbor_tactics)
    rows = []
    for ex in examples:
        row = ex.to_json(corpus)
        row["input"] = format_input(ex.state, [corpus.premises[i] for i in ex.premises], cfg.input.max_bytes,
                                    cfg.input.premise_text, cfg.input.max_state_bytes, ex.tactics)[0]
        rows.append(row)
    write_jsonl(path, rows)
    stats = {"split": split, "fingerprint": fp, **st.as_dict(), "skips": ds.skips.as_dict()}
    if step_stats is not None:
        stats["granularity"] = granularity
        stats["tactic_steps"] = step_stats.as_dict()
    write_json(stats_path, stats)
    log.info("%s: %d examples (%d with positives) -> %s", split, st.examples, st.with_positives, path)
    return path, stats


def load_pairs(path: str | Path) -> tuple[list[str], list[str]]:
    """(inputs, tactics) of a built data file."""
    inputs, tactics = [], []
    for _, row in iter_jsonl(path):
        inputs.append(row["input"])
        tactics.append(row["tactic"])
    return inputs, tactics


def format_stats(stats: dict) -> str:
    b = stats["input_bytes"]
    neg = stats["negatives_same_module"] + stats["negatives_other_module"]
    return "\n".join([
        f"{stats['split']}: {stats['examples']} pairs from {stats['tactics']} tactics "
        f"({stats['with_positives']} with known premises, {stats['without_premises']} with none shown)",
        f"  positives per example: {stats['positives_per_example']}",
        f"  negatives: {neg} ({stats['negatives_same_module']} same module, "
        f"{stats['negatives_other_module']} other modules; {stats['same_module_shortfall']} same-module "
        f"slots filled from other modules)",
        f"  input bytes: mean {b['mean']}, p50 {b['p50']}, p90 {b['p90']}, p99 {b['p99']}, max {b['max']}; "
        f"{stats['truncated_examples']} examples lost {stats['premises_dropped']} premises to the budget",
        *_format_steps(stats.get("tactic_steps")),
    ])


def _format_steps(st: dict | None) -> list[str]:
    if not st:
        return []
    kept = ", ".join(f"{n} {k}" for k, n in st["kept"].items())
    over = sum(st["dropped_over_budget"].values())
    dup = sum(st["dropped_duplicates"].values())
    return [(f"  tactic level: {st['steps']} steps from {st['tactic_proofs']} by-proofs and "
             f"{st['term_proofs']} term proofs ({kept}); {st['approximate_state']} at an approximate "
             f"state; dropped {over} over the target budget, {dup} repeats")]
