"""Where proof search gets premises and tactics: two small interfaces and their in-process forms.

Search asks a `PremiseSource` for the premises of a state, then a `TacticSource` for tactics
given the state and those premises. The same search runs against a retriever and a generator
held in this process (the classes here) or against shared Ray actors (`prover.search.actors`),
which implement the same two methods by calling the actors.

What crosses a process boundary is kept light: premises are `prover.data.premise.Premise`
records and suggestions are `Suggested` pairs, so a search worker never imports torch.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from prover.data.premise import Premise

if TYPE_CHECKING:  # heavy imports (torch) only where a generator or retriever is really held
    from generator.model import TacticGenerator
    from retriever.base import Retriever, TheoremContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Suggested:
    """A tactic proposed for a state and its log-probability under the generator."""

    tactic: str
    logprob: float


class ModelCallTimeout(Exception):
    """A retriever or generator call that outlived the search's time budget (a source that can
    wait with a limit, such as a Ray actor's, raises it); the search ends the theorem as a timeout."""


class PremiseSource(Protocol):
    def retrieve(self, states: Sequence[str],
                 contexts: Sequence[TheoremContext | None]) -> list[list[Premise]]:
        """For each state, its premises best first (possibly none)."""


class TacticSource(Protocol):
    def suggest(self, requests: Sequence[tuple[str, Sequence[Premise]]]) -> list[list[Suggested]]:
        """For each (state, premises), distinct tactics best first."""


class NoPremises:
    """`--retriever none`: the generator sees the state alone."""

    def retrieve(self, states: Sequence[str],
                 contexts: Sequence[TheoremContext | None]) -> list[list[Premise]]:
        return [[] for _ in states]


class RetrieverPremises:
    """The top `k` premises of a retriever held in this process.

    A context whose file is not in the retriever's corpus (a theorem of another library, or a
    file left out of a small test corpus) cannot restrict premises to the accessible ones: it
    is dropped, and the state is ranked against the whole corpus. `contexts_dropped` counts it.
    An imports context (a MiniF2F header's `import Mathlib`) names modules: they are resolved to
    the corpus files that declare them, and their import closure is accessible.
    """

    def __init__(self, retriever: Retriever, k: int, accessible_only: bool = False) -> None:
        if k <= 0:
            raise ValueError(f"premises per state must be positive, not {k}")
        self.retriever = retriever
        self.k = k
        self.accessible_only = accessible_only  # a dropped context: no premises, not the whole corpus
        self.contexts_dropped = 0

    def _usable(self, ctx: TheoremContext | None) -> TheoremContext | None:
        corpus = self.retriever.corpus
        if ctx is not None and hasattr(ctx, "files"):  # ImportsContext: modules (or paths) imported
            found = [corpus.find_file(m) for m in ctx.files]
            paths = tuple(dict.fromkeys(corpus.files[i] for i in found if i is not None))
            if not paths:
                self.contexts_dropped += 1
                return None
            return type(ctx)(paths)
        if ctx is not None and ctx.file_path not in corpus.file_index:
            self.contexts_dropped += 1
            return None
        return ctx

    def retrieve(self, states: Sequence[str],
                 contexts: Sequence[TheoremContext | None]) -> list[list[Premise]]:
        if not states:
            return []
        usable = [self._usable(c) for c in contexts]
        keep = [i for i, c in enumerate(usable) if c is not None or not self.accessible_only]
        out: list[list[Premise]] = [[] for _ in states]
        if keep:
            ranked = self.retriever.retrieve([states[i] for i in keep], self.k, [usable[i] for i in keep])
            for i, row in zip(keep, ranked):
                out[i] = [r.premise for r in row]
        return out


class GeneratorTactics:
    """A tactic generator held in this process, generating as its settings say (GenerateConfig:
    `num_tactics` tactics per state, beam width, method, batch size, input budget)."""

    def __init__(self, generator: TacticGenerator) -> None:
        self.generator = generator
        self.max_bytes = generator.settings.max_bytes or generator.input_cfg.max_bytes

    def input_texts(self, requests: Sequence[tuple[str, Sequence[Premise]]]) -> list[str]:
        """The exact text the model reads for each (state, premises)."""
        return [self.generator.input_text(state, premises, self.max_bytes)[0] for state, premises in requests]

    def suggest(self, requests: Sequence[tuple[str, Sequence[Premise]]]) -> list[list[Suggested]]:
        if not requests:
            return []
        built = [self.generator.input_text(state, premises, self.max_bytes) for state, premises in requests]
        out = self.generator.generate([text for text, _ in built], states=[state for state, _ in requests],
                                      premises=[[p.full_name for p in ps[:kept]]
                                                for (_, ps), (_, kept) in zip(requests, built)])
        return [[Suggested(s.tactic, float(s.logprob)) for s in row] for row in out]


def describe(source: Any) -> str:
    """A short name for logs and result files."""
    return getattr(source, "name", None) or type(source).__name__
