"""Which input a generator model reads, known before the model loads: whether it reads premises
and in which layout (generator/settings.py `InputConfig.layout` / `reads_premises`).

Every model trained here saves its input settings beside its weights (`input_config.json`).
ReProver's published checkpoints carry none, so they are known here by hub id, also when
downloaded into the Hugging Face cache (the folder's path names the id), or by a setting
(`generator.input_format`) for a copy elsewhere.

Why ReProver's retrieval-augmented checkpoint reads premises *with* their `<a>…</a>` marks:
ReProver's generator data module today removes the marks from training inputs
(`remove_marks` in generation/datamodule.py, since its July 2024 vLLM rework), while its
inference path (`RetrievalAugmentedGenerator` in prover/tactic_generator.py) keeps them. The
published Lean 4 checkpoints predate that rework: every generator config up to it
(`generator/confs/cli_lean4_*.yaml`, e.g. at the March 2024 "upgrade to lean 4" commit) sets
`keep_marks: true`, under which the data module left the marks in inputs and targets alike,
and ReProver's README shows that checkpoint an input with its marks. So the checkpoint was
trained, and is evaluated by ReProver, on marked premises: we keep them, and remove marks
from its outputs (it learned to write them in tactics) as ReProver does.
"""
from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

from generator.settings import InputConfig
from prover.data.reprover_text import REPROVER_MAX_BYTES

INPUT_CONFIG = "input_config.json"  # beside config.json: the input settings the model was trained with

# ReProver's byte budgets (generation/confs/cli_lean4_*.yaml: max_inp_seq_len, max_oup_seq_len).
_REPROVER = InputConfig(max_bytes=REPROVER_MAX_BYTES, max_target_bytes=512, layout="reprover")
RETRIEVAL_AUGMENTED = "kaiyuy/leandojo-lean4-retriever-tacgen-byt5-small"
WITHOUT_RETRIEVAL = "kaiyuy/leandojo-lean4-tacgen-byt5-small"

# The setting's values (`generator.input_format`) and what each means.
FORMATS: dict[str, InputConfig] = {
    "project": InputConfig(),
    "reprover": _REPROVER,
    "reprover-no-premises": replace(_REPROVER, reads_premises=False),
}

# ReProver's published generators, by hub id: (format, the model to use for retrieval instead).
KNOWN_MODELS: dict[str, tuple[str, str | None]] = {
    RETRIEVAL_AUGMENTED: ("reprover", None),
    WITHOUT_RETRIEVAL: ("reprover-no-premises", RETRIEVAL_AUGMENTED),
    "kaiyuy/leandojo-lean3-retriever-tacgen-byt5-small": ("reprover", None),
    "kaiyuy/leandojo-lean3-tacgen-byt5-small": ("reprover-no-premises",
                                                "kaiyuy/leandojo-lean3-retriever-tacgen-byt5-small"),
}


def _hub_id(path: str) -> str | None:
    """The published checkpoint `path` is: its hub id, a Hugging Face cache folder of it
    (`…/models--kaiyuy--NAME/snapshots/REV`, what `huggingface-cli download` leaves), or a folder
    whose config.json names it."""
    if path in KNOWN_MODELS:
        return path
    for part in Path(path).parts:
        if part.startswith("models--") and part[len("models--"):].replace("--", "/", 1) in KNOWN_MODELS:
            return part[len("models--"):].replace("--", "/", 1)
    config = Path(path) / "config.json"
    if config.is_file():
        try:
            name = json.loads(config.read_text()).get("_name_or_path")
        except (OSError, ValueError):
            return None
        return name if name in KNOWN_MODELS else None
    return None


def input_config(path: str | Path, input_format: str | None = None) -> InputConfig:
    """The input settings of the model at `path` (a folder or hub id): `input_format` when set,
    else the folder's input_config.json, else a published checkpoint's known format, else ours."""
    if input_format is not None:
        if input_format not in FORMATS:
            raise ValueError(f"generator.input_format must be one of {', '.join(FORMATS)} or null, "
                             f"not {input_format!r}")
        return FORMATS[input_format]
    saved = Path(str(path)) / INPUT_CONFIG
    if saved.is_file():
        return InputConfig(**json.loads(saved.read_text()))
    hub = _hub_id(str(path))
    return FORMATS[KNOWN_MODELS[hub][0]] if hub else InputConfig()


def instead(path: str | Path) -> str:
    """What to use instead of a model that reads no premises, for a retriever's row."""
    hub = _hub_id(str(path))
    alt = KNOWN_MODELS[hub][1] if hub else None
    return alt or "a generator trained with premises (prover generator train)"


def refuse_premises(path: str | Path, retrievers: list[str], input_format: str | None = None) -> None:
    """Raise ValueError in one line when a retriever other than `none` would hand premises to a
    model that reads none: before Ray starts and before run.json is written."""
    if input_config(path, input_format).reads_premises:
        return
    rows = [r for r in retrievers if r != "none"]
    if rows:
        raise ValueError(f"generator {path} was trained without premises, so retriever "
                         f"{', '.join(rows)} would only disturb it: use --generator {instead(path)} "
                         f"(or --retriever none)")


def describe(cfg: InputConfig) -> dict:
    return asdict(cfg)
