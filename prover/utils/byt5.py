"""The size of a ByT5-architecture model (a gated-GELU T5 over bytes): the one size type of the
tactic generator (generator/settings.py ModelConfig) and of ReProver's retriever encoder
(retriever/settings.py ReProverConfig). The defaults are google/byt5-small's encoder."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ByT5Size:
    d_model: int = 1472
    d_ff: int = 3584
    num_layers: int = 12  # encoder layers (the generator's decoder has num_decoder_layers)
    num_heads: int = 6
    d_kv: int = 64
