"""A LeanDojo-format dataset on disk: `corpus.jsonl[.gz]` beside `<strategy>/{train,val,test}.json[.gz]`."""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from prover.data.additive_twins import render_twins
from prover.data.corpus import Corpus
from prover.data.demo import DEMO, demo_root
from prover.data.errors import DataError, SkipLog
from prover.data.jsonio import resolve
from prover.data.halves import SOURCE as HALVES_SOURCE
from prover.data.halves import half_keys, is_half, theorem_key
from prover.data.theorem import DEFAULT_MAX_STATE_CHARS, Theorem, load_theorems, split_path

log = logging.getLogger(__name__)


@dataclass
class Dataset:
    root: Path
    on_error: str = "raise"
    max_state_chars: int = DEFAULT_MAX_STATE_CHARS
    # Render `@[to_additive]` twins' texts additively (`prover.data.additive_twins`; the
    # setting `data.render_to_additive`, off by default as there).
    render_to_additive: bool = False
    # How the user gave `root` (`--data`, `--corpus`, `data.root`): errors name it that way.
    source: str = "data.root"

    def __post_init__(self) -> None:
        self.root = demo_root() if str(self.root) == DEMO else Path(self.root)
        if not self.root.is_dir():
            from prover.data.location import missing_hint
            hint = missing_hint(self.root)
            raise DataError(f"{self.source} {self.root}", "dataset folder not found (expected "
                            "corpus.jsonl and split folders such as random/)" + (f"; {hint}" if hint else ""))
        if self.on_error not in ("raise", "skip"):
            raise ValueError(f"data.on_error must be 'raise' or 'skip', not {self.on_error!r}")
        if self.max_state_chars <= 0:
            raise ValueError(f"data.max_state_chars must be positive, not {self.max_state_chars}")
        self.skips = SkipLog()

    @property
    def name(self) -> str:
        return self.root.resolve().name

    def _skips(self) -> SkipLog | None:
        return self.skips if self.on_error == "skip" else None

    def _mark(self) -> tuple[Counter, dict[str, int]]:
        return self.skips.counts.copy(), {r: len(v) for r, v in self.skips.examples.items()}

    def _warn_skipped(self, path: Path, mark: tuple[Counter, dict[str, int]]) -> None:
        """One warning per file read in skip mode, with the count: a dropped record must not go
        unnoticed, nor flood the log one line each."""
        new = self.skips.counts - mark[0]
        if not new:
            return
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(new.items()))
        # The first example this file added (earlier files may have filled the reason's list).
        first = next((self.skips.examples[r][mark[1].get(r, 0)] for r in sorted(new)
                      if len(self.skips.examples.get(r, [])) > mark[1].get(r, 0)), "")
        log.warning("%s: skipped %s (on_error=skip)%s", path, reasons,
                    f"; first: {first}" if first else "")

    def corpus(self) -> Corpus:
        mark = self._mark()
        corpus = Corpus.load(self.root / "corpus.jsonl", skips=self._skips())
        self._warn_skipped(self.root / "corpus.jsonl", mark)
        if self.render_to_additive:
            # The one place a premise's text is read for retrieval and the service: a twin's
            # text is its own statement, not its multiplicative source's.
            corpus.premises, n = render_twins(corpus.premises)
            log.debug("%s: %d to_additive twins rendered additively", self.root, n)
        if not len(corpus):  # nothing to rank: every later step would fail far from the cause
            raise DataError(resolve(self.root / "corpus.jsonl"),
                            ("empty" if not corpus.files else f"{len(corpus.files)} files, no premise")
                            + ": a corpus with no premise to rank (expected LeanDojo's corpus.jsonl, "
                            "one line per Lean file with its premises)")
        return corpus

    def theorems(self, split: str) -> list[Theorem]:
        """Theorems of e.g. `random/test`, or of a half of real val (`leandojo-real/select`,
        `leandojo-real/report`: prover.data.halves)."""
        if is_half(split):
            keep = half_keys(split)
            return [t for t in self.theorems(HALVES_SOURCE) if theorem_key(t) in keep]
        mark = self._mark()
        path = split_path(self.root, split)
        theorems = load_theorems(path, skips=self._skips(), max_state_chars=self.max_state_chars)
        self._warn_skipped(path, mark)
        return theorems

    def has_split(self, split: str) -> bool:
        """Whether `split` (e.g. `random/val`) has a file, plain or gzipped."""
        if is_half(split):
            return self.has_split(HALVES_SOURCE)
        p = self.root / f"{split}.json"
        return p.exists() or p.with_name(p.name + ".gz").exists()

    def strategies(self) -> list[str]:
        """Split folders present (random, novel_premises, or ours: ri, pl, pf)."""
        return sorted(p.name for p in self.root.iterdir()
                      if p.is_dir() and any(p.glob("test.json*")))
