"""The tactic generators behind LeanCopilot's `POST /generate`, and what `POST /encode` encodes with.

LeanCopilot (`LeanCopilot/Models/External.lean`) calls an external model as
    POST /generate {"name", "input", "prefix"} -> {"outputs": [{"output", "score"}, ...]}
    POST /encode   {"name", "input"}           -> {"outputs": [float, ...]}
A `ServedGenerator` answers a batch of /generate requests for one generator: the premises of a
served retriever go before each state when configured (as in proof search), then one model
call per distinct prefix, since a batch's decoders must all start from the same bytes. Scores
are log P(tactic | input) of the whole tactic, prefix included.

An encoder is a served retriever that embeds states (`encode_states`: CFR, conventional CFR,
the ReProver-style retriever), so /encode returns the vector /search ranks premises by.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prover.data.errors import UserInputError
from prover.data.premise import Premise
from prover.serve.errors import BadRequest
from retriever.base import Retriever

log = logging.getLogger(__name__)

METHODS = ("beam", "sampling")


@dataclass(frozen=True)
class Generated:
    generator: str
    suggestions: list[Any]  # generator.model.Suggestion: (tactic, logprob), best first
    seconds: float  # from submission to answer, queueing included


@dataclass(frozen=True)
class Encoded:
    encoder: str
    vector: list[float]
    seconds: float


class ServedGenerator:
    """One loaded generator and how it is asked (samples, method, premises)."""

    def __init__(self, cfg: Any, model: Any) -> None:
        self.cfg = cfg
        self.name = cfg.name
        self.model = model  # generator.model.TacticGenerator

    @property
    def max_prefix_bytes(self) -> int:
        return self.model.input_cfg.max_target_bytes

    def check_prefix(self, prefix: str) -> None:
        n = len(prefix.encode("utf-8"))
        if n > self.max_prefix_bytes:
            raise BadRequest(f"prefix has {n:,} bytes; generator {self.name!r} writes tactics of at "
                             f"most {self.max_prefix_bytes:,} bytes", "prefix")

    def generate(self, states: Sequence[str], prefixes: Sequence[str],
                 premises: Sequence[Sequence[Premise]]) -> list[list[Any]]:
        """Suggestions for each (state, prefix, premises), in order."""
        texts = [self.model.input_text(s, p, self.cfg.max_bytes)[0] for s, p in zip(states, premises)]
        out: list[list[Any] | None] = [None] * len(texts)
        by_prefix: dict[str, list[int]] = {}
        for i, prefix in enumerate(prefixes):
            by_prefix.setdefault(prefix, []).append(i)
        for prefix, idx in by_prefix.items():
            rows = self.model.generate([texts[i] for i in idx], batch_size=len(idx), prefix=prefix,
                                       states=[states[i] for i in idx])
            for i, row in zip(idx, rows):
                out[i] = row
        return out  # type: ignore[return-value]


def load_generators(cfgs: Sequence[Any], device: str) -> dict[str, ServedGenerator]:
    """The configured generators by name; a UserInputError, naming the entry, for a bad one."""
    from generator.model import TacticGenerator
    from prover.utils.device import pick_device
    served: dict[str, ServedGenerator] = {}
    for i, cfg in enumerate(cfgs):
        where = f"generators[{i}]"
        if not cfg.name or cfg.name in served:
            raise UserInputError(f"{where}.name must be set and differ from the other generators' "
                                 f"(got {cfg.name!r})")
        if not cfg.model:
            raise UserInputError(f"{where}.model is not set: give a trained generator folder "
                                 f"(<run_dir>/generator/model)")
        if cfg.method not in METHODS:
            raise UserInputError(f"{where}.method must be beam or sampling, not {cfg.method!r}")
        if cfg.num_tactics < 1 or cfg.batching.max_batch_size < 1 or cfg.batching.max_queued < 0 \
                or (cfg.premises is not None and cfg.premises.k < 1):
            raise UserInputError(f"{where}: num_tactics, batching.max_batch_size and premises.k must be "
                                 f"positive, batching.max_queued >= 0")
        model = TacticGenerator.load(cfg.model, device=pick_device(device), generate=cfg)
        model.model.eval()
        served[cfg.name] = ServedGenerator(cfg, model)
        log.info("generator %r from %s (%s, %d tactics)", cfg.name, cfg.model, cfg.method, cfg.num_tactics)
    return served


def can_encode(retriever: Retriever) -> bool:
    """Whether a served retriever embeds states in a vector (BM25 and hybrids do not)."""
    return callable(getattr(retriever, "encode_states", None))
