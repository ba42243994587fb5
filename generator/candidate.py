"""One candidate tactic for one state, with the evidence for it: what every ordering reads.

`TacticGenerator.candidates` (generator/model.py) gathers them from beam search, the tactic
pool, the tactic neighbours and what a tried option adds (generator/tried/instantiate.py); the
hand-set score (`TacticGenerator.score`) or a tried learned ranker (generator/tried/rerank.py)
orders them.
"""
from __future__ import annotations

from dataclasses import dataclass

@dataclass(frozen=True, slots=True)
class Candidate:
    tactic: str
    model_logprob: float  # log P(tactic | input), summed over its bytes and </s>
    neighbour_prob: float | None  # the neighbours' vote; None when they were not consulted
    in_beam: bool  # written by beam search (or sampling)
    pool_rank: int  # its place in the tactic pool (most frequent first); -1: not there
    instantiated: bool  # added by the `extra_candidates` hook (a neighbour's template filled with a premise shown)
    premise_rank: int  # the rank of the best premise shown that it names; -1: none
