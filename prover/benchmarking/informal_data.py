"""What the informal search benchmarks read: mathlib-src's corpus and the docs of its real sources."""
from __future__ import annotations

import tempfile
from pathlib import Path

from prover.data.corpus import Corpus
from prover.data.project_corpus import build_corpus


def mathlib_src_with_docs(data_root: str | Path) -> tuple[Corpus, set[str], Path]:
    """mathlib-src's corpus, its premises' full names, and a corpus folder built by `prover data
    corpus` from the 300 real source files beside it (their docstrings and module docs), in a
    new temporary folder; exits with the flag to pass when mathlib-src is not there."""
    data = Path(data_root) / "mathlib-src"
    if not (data / "corpus.jsonl.gz").is_file():
        raise SystemExit(f"no corpus at {data}: pass --data PATH/TO/shared/data")
    corpus = Corpus.load(data / "corpus.jsonl.gz")
    docs_dir = Path(tempfile.mkdtemp(prefix="informal-docs-"))
    build_corpus(data / "leandojo-real" / "source", docs_dir, progress=False, say=lambda _: None)
    return corpus, {p.full_name for p in corpus.premises}, docs_dir


def start(args) -> tuple[str, Corpus, set[str], Path]:
    """What an informal search benchmark starts with: the clean-tree check (the commit its rows
    carry; `args.allow_dirty`), logging, then `mathlib_src_with_docs(args.data)`."""
    import logging

    from prover.benchmarking.harness import require_clean_tree
    from prover.utils.logs import setup_logging
    commit = require_clean_tree(args.allow_dirty)
    setup_logging()
    logging.getLogger("benchmark").setLevel(logging.INFO)
    return (commit, *mathlib_src_with_docs(args.data))
