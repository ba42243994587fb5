"""Premise-augmented training examples, decoupled from any retriever (the paper's recipe).

For every traced tactic (with `data.granularity=tactic`, every pseudo step of a split proof)
whose premises the corpus knows, the input lists `max_premises` premises: a random number
of its positives, from 1 to min(#positives, max_premises), and negatives for the rest,
`same_module_fraction` of them from the files of the chosen positives and the others from
other accessible files. The list is shuffled, so a premise's position says nothing about
whether it is used. With `positive_rate` < 1, a tactic with positives is shown none of them
at that rate (negatives alone, as a retriever's miss), and with `without_premises: negatives` a
tactic without known premises is shown negatives: then every input holds premises, and about as
often no gold one as retrieval's at test time. Every draw depends only on (seed, example number): the same seed gives
the same data.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from prover.data.corpus import Corpus
from prover.data.errors import SkipLog
from prover.data.pairs import gold_indices
from prover.data.tactic_steps import PseudoStep
from prover.data.theorem import Theorem
from generator.inputs import format_input, n_bytes
from generator.settings import AugmentConfig
from prover.utils.progress import progress_bar

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GeneratorExample:
    theorem: str
    file_path: str
    tactic_index: int
    state: str
    tactic: str
    premises: tuple[int, ...]  # corpus indices, in input order
    positive: tuple[bool, ...]
    # Tactic-level pseudo steps only (prover/data/tactic_steps.py): where the example came from.
    kind: str | None = None
    approximate_state: bool | None = None
    # Retrieval-augmented inputs: the neighbour tactics the input shows (generator/inputs.py).
    tactics: tuple[str, ...] = ()

    def to_json(self, corpus: Corpus) -> dict:
        """Premises by name: indices mean nothing outside this corpus."""
        row = {"theorem": self.theorem, "file_path": self.file_path, "tactic_index": self.tactic_index,
               "state": self.state, "tactic": self.tactic,
               "premises": [corpus.premises[i].full_name for i in self.premises],
               "positive": list(self.positive)}
        if self.kind is not None:  # statement-level rows stay as they were, byte for byte
            row["kind"] = self.kind
            row["approximate_state"] = self.approximate_state
        if self.tactics:
            row["neighbor_tactics"] = list(self.tactics)
        return row


@dataclass
class AugmentStats:
    tactics: int = 0
    examples: int = 0
    with_positives: int = 0
    without_premises: int = 0
    skipped_file_not_in_corpus: int = 0
    positives_shown: Counter = field(default_factory=Counter)  # positives per example -> count
    positives_available: Counter = field(default_factory=Counter)  # min(#positives, max) -> count
    negatives_same_module: int = 0
    negatives_other_module: int = 0
    same_module_shortfall: int = 0  # same-module slots filled from other files (too few there)
    input_bytes: list[int] = field(default_factory=list, repr=False)
    truncated: int = 0  # examples whose premises did not all fit the byte budget
    premises_dropped: int = 0
    premises_kept: int = 0  # premises the inputs hold after the byte budget, summed
    gold_kept: int = 0  # inputs holding at least one positive after the byte budget

    def as_dict(self) -> dict:
        b = np.asarray(self.input_bytes or [0])
        return {
            "tactics": self.tactics, "examples": self.examples, "with_positives": self.with_positives,
            "without_premises": self.without_premises,
            "skipped_file_not_in_corpus": self.skipped_file_not_in_corpus,
            "positives_per_example": {str(k): v for k, v in sorted(self.positives_shown.items())},
            "min_positives_max": {str(k): v for k, v in sorted(self.positives_available.items())},
            "negatives_same_module": self.negatives_same_module,
            "negatives_other_module": self.negatives_other_module,
            "same_module_shortfall": self.same_module_shortfall,
            "input_bytes": {"mean": round(float(b.mean()), 1), "p50": int(np.percentile(b, 50)),
                            "p90": int(np.percentile(b, 90)), "p99": int(np.percentile(b, 99)),
                            "max": int(b.max())},
            "truncated_examples": self.truncated, "premises_dropped": self.premises_dropped,
            "premises_shown_mean": round(self.premises_kept / max(self.examples or len(self.input_bytes), 1), 3),
            "inputs_with_gold": self.gold_kept,
        }


def _draw(rng: np.random.Generator, candidates: np.ndarray, n: int) -> np.ndarray:
    if n <= 0 or not len(candidates):
        return candidates[:0]
    return rng.choice(candidates, size=min(n, len(candidates)), replace=False)


def augment_tactic(rng: np.random.Generator, gold: Sequence[int], accessible: np.ndarray,
                   corpus: Corpus, cfg: AugmentConfig, stats: AugmentStats | None = None
                   ) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """Premises (corpus indices, shuffled) and their positive flags for one tactic."""
    stats = stats if stats is not None else AugmentStats()
    m = cfg.max_premises
    if m <= 0:  # premises off: the input is the bare state
        return (), ()
    if not gold:
        if cfg.without_premises == "bare":
            return (), ()
        if cfg.without_premises != "negatives":
            raise ValueError(f"augment.without_premises must be bare or negatives, not {cfg.without_premises!r}")
        chosen = _draw(rng, np.flatnonzero(accessible), m)
        stats.negatives_other_module += len(chosen)
        return tuple(int(i) for i in chosen), (False,) * len(chosen)
    n_avail = min(len(gold), m)
    # Drawn only when some are hidden, so data built at the default rate stays as it was.
    shown = cfg.positive_rate >= 1.0 or rng.random() < cfg.positive_rate
    k = int(rng.integers(1, n_avail + 1)) if shown else 0
    stats.positives_available[n_avail] += 1
    stats.positives_shown[k] += 1
    pos = rng.choice(np.asarray(gold), size=k, replace=False)
    candidates = accessible.copy()
    candidates[list(gold)] = False  # an unshown positive must never be presented as a negative
    # A retriever's miss still ranks the gold premises' neighbours: those files, even with no positive shown.
    files = corpus.premise_file[pos] if k else corpus.premise_file[np.asarray(gold)]
    same_files = np.isin(corpus.premise_file, np.unique(files))
    n_neg = m - k
    n_same = int(n_neg * cfg.same_module_fraction)
    same = _draw(rng, np.flatnonzero(candidates & same_files), n_same)
    other = _draw(rng, np.flatnonzero(candidates & ~same_files), n_neg - len(same))
    if len(same) < n_same:
        stats.same_module_shortfall += n_same - len(same)
    if len(same) + len(other) < n_neg:  # few files outside: take more from the same ones
        rest = np.flatnonzero(candidates & same_files)
        same = np.concatenate([same, _draw(rng, np.setdiff1d(rest, same), n_neg - len(same) - len(other))])
    stats.negatives_same_module += len(same)
    stats.negatives_other_module += len(other)
    items = [(int(i), True) for i in pos] + [(int(i), False) for i in same] + [(int(i), False) for i in other]
    order = rng.permutation(len(items))
    return tuple(items[o][0] for o in order), tuple(items[o][1] for o in order)


def augment_examples(theorems: Iterable[Theorem], corpus: Corpus, cfg: AugmentConfig, seed: int,
                     max_bytes: int, skips: SkipLog | None = None, progress: bool = True,
                     premise_text: str = "full",
                     max_state_bytes: int | None = None,
                     neighbor_tactics: Callable[[str, str], Sequence[str]] | None = None,
                     ) -> tuple[list[GeneratorExample], AugmentStats]:
    """One example per traced tactic of `theorems` (see the module doc). `neighbor_tactics`:
    (state, theorem key `file::name`) -> the neighbour tactics its input shows, for
    retrieval-augmented inputs."""
    stats = AugmentStats()
    examples: list[GeneratorExample] = []
    for thm in progress_bar(theorems, desc="augment with premises", unit="theorem", disable=not progress):
        if thm.file_path not in corpus.file_index:
            stats.skipped_file_not_in_corpus += len(thm.traced_tactics)
            if skips is not None:
                skips.add("theorem file not in corpus", f"{thm.full_name} ({thm.file_path})")
            continue
        accessible = corpus.accessible_mask(thm.file_path, thm.start)
        for j, tac in enumerate(thm.traced_tactics):
            stats.tactics += 1
            rng = np.random.default_rng([seed, stats.tactics])
            gold = gold_indices(tac, corpus, skips)  # used, so accessible whatever our mask says
            premises, positive = augment_tactic(rng, gold, accessible, corpus, cfg, stats)
            stats.with_positives += bool(gold)
            stats.without_premises += not premises
            shown = (tuple(neighbor_tactics(tac.state_before, f"{thm.file_path}::{thm.full_name}"))
                     if neighbor_tactics is not None else ())
            text, kept = format_input(tac.state_before, [corpus.premises[i] for i in premises], max_bytes,
                                      premise_text, max_state_bytes, shown)
            stats.input_bytes.append(n_bytes(text))
            stats.premises_kept += kept
            stats.gold_kept += any(positive[:kept])
            if kept < len(premises):
                stats.truncated += 1
                stats.premises_dropped += len(premises) - kept
            step = tac if isinstance(tac, PseudoStep) else None
            examples.append(GeneratorExample(thm.full_name, thm.file_path, j, tac.state_before,
                                             tac.tactic, premises, positive,
                                             step.kind if step else None,
                                             step.approximate_state if step else None, shown))
    stats.examples = len(examples)
    return examples, stats
