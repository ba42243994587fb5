"""Generator evaluation under premise conditions: exact match and gold-tactic likelihood.

The same examples are scored with the bare state, with the tactic's gold premises, and with
each retriever's top k, so the rows differ only in the premises shown.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prover.data.corpus import Corpus
from prover.data.pairs import gold_indices
from prover.data.premise import Premise
from prover.data.theorem import Theorem
from prover.utils.progress import progress_bar
from retriever.base import Retriever, TheoremContext
from generator.inputs import format_input
from generator.model import TacticGenerator
from generator.train import normalize_tactic

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EvalExample:
    theorem: str
    file_path: str
    context: TheoremContext | None
    state: str
    tactic: str
    gold: tuple[int, ...]


def eval_examples(theorems: Sequence[Theorem], corpus: Corpus, max_examples: int = 0,
                  seed: int = 0) -> list[EvalExample]:
    out = []
    for thm in theorems:
        ctx = TheoremContext(thm.file_path, thm.start) if thm.file_path in corpus.file_index else None
        for tac in thm.traced_tactics:
            out.append(EvalExample(thm.full_name, thm.file_path, ctx, tac.state_before, tac.tactic,
                                   tuple(gold_indices(tac, corpus))))
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
                       premises: Sequence[Sequence[Premise]], num_samples: int,
                       batch_size: int) -> dict:
    """Top-1 / top-`num_samples` exact match, and the gold tactic's log-likelihood."""
    budget = gen.input_cfg.max_bytes
    inputs, shown = [], []
    for ex, ps in zip(examples, premises):
        text, kept = format_input(ex.state, ps, budget)
        inputs.append(text)
        shown.append(kept)
    golds = [ex.tactic for ex in examples]
    loglik: list[float] = []
    top1 = topn = 0
    t0 = time.perf_counter()
    for lo in progress_bar(range(0, len(inputs), batch_size), desc="generate tactics", unit="batch"):
        ins, tacs = inputs[lo: lo + batch_size], golds[lo: lo + batch_size]
        loglik.extend(gen.tactic_logprobs(ins, tacs))
        for sugg, gold in zip(gen.generate(ins, num_samples=num_samples, batch_size=batch_size), tacs):
            hits = [normalize_tactic(s.tactic) == normalize_tactic(gold) for s in sugg]
            top1 += bool(hits) and hits[0]
            topn += any(hits)
    n = max(len(examples), 1)
    n_bytes = [len(t.encode("utf-8")) + 1 for t in golds]
    return {"n": len(examples), "exact_match@1": top1 / n, f"exact_match@{num_samples}": topn / n,
            "gold_loglik": float(np.mean(loglik)) if loglik else float("nan"),
            "gold_loglik_per_byte": float(np.sum(loglik) / max(sum(n_bytes), 1)),
            "premises_shown": float(np.mean(shown)) if shown else 0.0,
            "seconds": round(time.perf_counter() - t0, 1)}


def throughput(gen: TacticGenerator, inputs: Sequence[str], num_samples: int, batch_size: int) -> float:
    """States per second through `generate` at this batch size (beam search)."""
    gen.generate(list(inputs[:batch_size]), num_samples=num_samples, batch_size=batch_size)  # warm-up
    t0 = time.perf_counter()
    gen.generate(list(inputs), num_samples=num_samples, batch_size=batch_size)
    return len(inputs) / (time.perf_counter() - t0)
