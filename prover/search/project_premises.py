"""The premises a search retrieves from when no `--corpus` is given: the project's own corpus.

`prover benchmark` (MiniF2F: `env.repl.project`, the miniF2F-lean4 checkout) and
`prove-sorries` (the project of the sorries) run on a Lake project; its premises are those of
its sources and of its `.lake/packages` at the versions it pins, not those of some older
dataset. `ensure_corpus` builds that corpus once per project state
(`prover.data.project_corpus.project_corpus`, under `retriever.corpus_cache`) and points
`retriever.corpus` at it, so every retriever (the priors included) ranks that corpus.

A MiniF2F theorem is elaborated after its header, not inside a project file: the premises it
may use are those of the modules its header imports (`header_context`).
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

NO_RETRIEVER = "none"
_IMPORT = re.compile(r"^import[ \t]+([^\n]*)", re.MULTILINE)


def ensure_corpus(cfg: Any, project: str | Path | None = None) -> str | None:
    """`retriever.corpus`, or else the corpus of `project` (default `env.repl.project`), built
    or reused; None when the retriever needs no corpus (`none`)."""
    r = cfg.retriever
    if r.name == NO_RETRIEVER or r.corpus:
        return r.corpus
    project = project or cfg.env.repl.project
    if not project:
        raise ValueError(f"retriever {r.name} needs a premise corpus: give --corpus (a dataset folder), or "
                         f"env.repl.project (the Lean project whose corpus is then built from its source)")
    from prover.data.project_corpus import project_corpus
    r.corpus = str(project_corpus(project, r.corpus_cache, progress=cfg.progress))
    log.info("retriever %s ranks the premises of %s (%s)", r.name, project, r.corpus)
    return r.corpus


def header_imports(header: str | tuple[str, ...]) -> tuple[str, ...]:
    """The modules a theorem header imports (`import Mathlib` lines); a header may come as its
    commands (ReplTarget's tuple)."""
    if not isinstance(header, str):
        header = "\n".join(header)
    return tuple(m for line in _IMPORT.findall(header) for m in line.split())


def header_context(header: str | tuple[str, ...]) -> Any:
    """The retrieval context of a theorem elaborated after `header`: its imports (module names,
    resolved against the corpus by `RetrieverPremises`), or None without imports."""
    from retriever.base import ImportsContext
    modules = header_imports(header)
    return ImportsContext(modules) if modules else None
