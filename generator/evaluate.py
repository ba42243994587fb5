"""Generator evaluation under premise conditions: exact match and gold-tactic likelihood.

The same examples are scored with the bare state, with the tactic's gold premises, and with
each retriever's top k, so the rows differ only in the premises shown. A `frequency` baseline
proposes the most frequent tactics of the training examples, whatever the state. Each row keeps
its per-example outcomes (hit at 1, hit at n, gold log-likelihood), for paired bootstrap
intervals over the same examples.
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from prover.data.corpus import Corpus
from prover.data.pairs import gold_indices
from prover.data.premise import Premise
from prover.data.theorem import Theorem
from prover.utils.progress import progress_bar
from retriever.base import Retriever, TheoremContext
from generator.inputs import normalize_tactic
from generator.model import TacticGenerator
from generator.neighbors import TacticNeighbors

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EvalExample:
    theorem: str
    file_path: str
    context: TheoremContext | None
    state: str
    tactic: str
    gold: tuple[int, ...]
    index: int = 0  # the tactic's position among its theorem's traced tactics

    @property
    def key(self) -> str:
        """Unique within a split: per-example outcome files and pairing go by it."""
        return f"{self.file_path}::{self.theorem}#{self.index}"


def eval_examples(theorems: Sequence[Theorem], corpus: Corpus, max_examples: int = 0,
                  seed: int = 0) -> list[EvalExample]:
    out = []
    for thm in theorems:
        ctx = TheoremContext(thm.file_path, thm.start) if thm.file_path in corpus.file_index else None
        for j, tac in enumerate(thm.traced_tactics):
            out.append(EvalExample(thm.full_name, thm.file_path, ctx, tac.state_before, tac.tactic,
                                   tuple(gold_indices(tac, corpus)), j))
    if 0 < max_examples < len(out):
        keep = np.sort(np.random.default_rng(seed).permutation(len(out))[:max_examples])
        out = [out[i] for i in keep]
    return out


def condition_premises(condition: str, examples: Sequence[EvalExample], corpus: Corpus,
                       retriever: Retriever | None, k: int, batch_size: int = 64) -> list[list[Premise]]:
    if condition == "none":
        return [[] for _ in examples]
    if condition == "gold":
        return [[corpus.premises[i] for i in ex.gold] for ex in examples]
    if retriever is None:
        raise ValueError(f"condition {condition!r} needs a retriever")
    out: list[list[Premise]] = []
    for lo in progress_bar(range(0, len(examples), batch_size), desc=f"retrieve premises ({condition})",
                           unit="batch"):
        chunk = examples[lo: lo + batch_size]
        ranked = retriever.retrieve([e.state for e in chunk], k, [e.context for e in chunk])
        out.extend([h.premise for h in hits] for hits in ranked)
    return out


def evaluate_condition(gen: TacticGenerator, examples: Sequence[EvalExample],
                       premises: Sequence[Sequence[Premise]], num_tactics: int,
                       batch_size: int, num_beams: int | None = None) -> dict:
    """Top-1 / top-`num_tactics` exact match, and the gold tactic's log-likelihood. The row's
    "per_example" holds each example's outcomes in example order: "hit@1" and
    f"hit@{num_tactics}" (0/1) and "loglik"."""
    inputs, shown, names = [], [], []
    for ex, ps in zip(examples, premises):
        text, kept = gen.input_text(ex.state, ps)
        inputs.append(text)
        shown.append(kept)
        names.append([p.full_name for p in ps[:kept]])
    golds = [ex.tactic for ex in examples]
    states = [ex.state for ex in examples]
    loglik: list[float] = []
    hit1: list[int] = []
    hitn: list[int] = []
    t0 = time.perf_counter()
    for lo in progress_bar(range(0, len(inputs), batch_size), desc="generate tactics", unit="batch"):
        ins, tacs = inputs[lo: lo + batch_size], golds[lo: lo + batch_size]
        loglik.extend(gen.tactic_logprobs(ins, tacs))
        for sugg, gold in zip(gen.generate(ins, num_tactics=num_tactics, batch_size=batch_size,
                                           states=states[lo: lo + batch_size],
                                           premises=names[lo: lo + batch_size], num_beams=num_beams), tacs):
            hits = [normalize_tactic(s.tactic) == normalize_tactic(gold) for s in sugg]
            hit1.append(int(bool(hits) and hits[0]))
            hitn.append(int(any(hits)))
    n = max(len(examples), 1)
    n_bytes = [len(t.encode("utf-8")) + 1 for t in golds]
    return {"n": len(examples), "exact_match@1": sum(hit1) / n, f"exact_match@{num_tactics}": sum(hitn) / n,
            "gold_loglik": float(np.mean(loglik)) if loglik else float("nan"),
            "gold_loglik_per_byte": float(np.sum(loglik) / max(sum(n_bytes), 1)),
            "premises_shown": float(np.mean(shown)) if shown else 0.0,
            "seconds": round(time.perf_counter() - t0, 1),
            "per_example": {"hit@1": hit1, f"hit@{num_tactics}": hitn, "loglik": [float(x) for x in loglik]}}


def frequent_tactics(theorems: Iterable[Theorem], corpus: Corpus, n: int) -> list[tuple[str, int]]:
    """The `n` most frequent tactics (whitespace-normalized) among the generator's training
    examples, with their counts, most frequent first; ties keep first-seen order. The examples
    are those `generator.augment` trains on: every traced tactic of a theorem whose file the
    corpus has."""
    counts: Counter[str] = Counter()
    for thm in theorems:
        if thm.file_path not in corpus.file_index:
            continue
        counts.update(normalize_tactic(t.tactic) for t in thm.traced_tactics)
    counts.pop("", None)
    return counts.most_common(n)


def exact_match_row(examples: Sequence[EvalExample], proposals: Iterable[Sequence[str]], num_tactics: int) -> dict:
    """Exact match at 1 and at `num_tactics` of each example's proposed tactics (best first),
    with per-example outcomes: the row of a baseline that has no likelihood."""
    hit1, hitn = [], []
    for ex, proposed in zip(examples, proposals):
        top = [normalize_tactic(t) for t in list(proposed)[:num_tactics]]
        gold = normalize_tactic(ex.tactic)
        hit1.append(int(bool(top) and top[0] == gold))
        hitn.append(int(gold in top))
    n = max(len(examples), 1)
    return {"n": len(examples), "exact_match@1": sum(hit1) / n, f"exact_match@{num_tactics}": sum(hitn) / n,
            "per_example": {"hit@1": hit1, f"hit@{num_tactics}": hitn}}


def evaluate_frequency(examples: Sequence[EvalExample], tactics: Sequence[str], num_tactics: int) -> dict:
    """The frequency baseline: the same `tactics` proposed, in order, for every example."""
    return exact_match_row(examples, (tactics for _ in examples), num_tactics)


def evaluate_neighbors(examples: Sequence[EvalExample], neighbors: TacticNeighbors, num_tactics: int) -> dict:
    """The neighbours baseline: for each state, the most probable tactics of its nearest
    training states (generator/neighbors.py), no model."""
    bar = progress_bar(examples, desc="tactic neighbours", unit="state")
    return exact_match_row(examples, (neighbors.distribution(ex.state) for ex in bar), num_tactics)


def throughput(gen: TacticGenerator, inputs: Sequence[str], num_tactics: int, batch_size: int,
               states: Sequence[str] | None = None, num_beams: int | None = None) -> float:
    """States per second through `generate` at this batch size (beam search, and the
    neighbours when `states` are given and the model has them)."""
    warm = None if states is None else list(states[:batch_size])
    gen.generate(list(inputs[:batch_size]), num_tactics=num_tactics, batch_size=batch_size, states=warm,
                 num_beams=num_beams)
    t0 = time.perf_counter()
    gen.generate(list(inputs), num_tactics=num_tactics, batch_size=batch_size,
                 states=None if states is None else list(states), num_beams=num_beams)
    return len(inputs) / (time.perf_counter() - t0)
