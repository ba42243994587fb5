"""One candidate tactic for one state, with the evidence for it: what every ordering reads.

`TacticGenerator.candidates` (generator/model.py) gathers them from beam search, the tactic
pool, the tactic neighbours and their premise-instantiated forms; the hand-set score
(`TacticGenerator.score`) or a learned ranker (generator/rerank.py) orders them.
"""
from __future__ import annotations

from dataclasses import dataclass

# Beside a generator's config.json: a learned candidate ranker (generator/rerank.py; none is
# shipped). Named here so loading a model checks for one without importing the ranker.
RANKER_MODEL = "candidate_ranker.txt"


@dataclass(frozen=True, slots=True)
class Candidate:
    tactic: str
    model_logprob: float  # log P(tactic | input), summed over its bytes and </s>
    neighbour_prob: float | None  # the neighbours' vote; None when they were not consulted
    in_beam: bool  # written by beam search (or sampling)
    pool_rank: int  # its place in the tactic pool (most frequent first); -1: not there
    instantiated: bool  # a neighbour's template filled with a premise shown
    premise_rank: int  # the rank of the best premise shown that it names; -1: none
