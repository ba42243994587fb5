"""Logging set-up shared by the CLI and the benchmark scripts.

Quiet by default: our own packages log at INFO, everyone else's only warnings and errors
(bm25s's "Building index" DEBUG lines, faiss's loader lines, Ray's start-up chatter, the Hugging
Face "Writing model shards" bars). `verbose` (`prover -v`) shows every library's DEBUG output.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

OUR_PACKAGES = ("prover", "retriever", "generator", "benchmarks", "__main__")
QUIET_LIBRARIES = ("bm25s", "faiss", "faiss.loader", "ray", "urllib3", "filelock", "httpx")


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    for name in OUR_PACKAGES:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.INFO)
    if not verbose:
        # Read by huggingface_hub and transformers when they are first imported (lazily, later);
        # a value the user set wins.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        # A script that imported transformers before this call (benchmarks/*.py import model
        # code at the top) has read the variable already: switch its bars off directly.
        if "transformers" in sys.modules and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1":
            from transformers.utils import logging as hf_logging
            hf_logging.disable_progress_bar()
    # Libraries that set their own logger's level on import (so the root level is not enough).
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.WARNING)


@contextlib.contextmanager
def expected_weight_mismatch() -> Iterator[None]:
    """Load a model whose checkpoint differs from it by design (a BERT body from an MLM folder:
    the MLM head is dropped, a new head starts random). transformers reports every such key as a
    warning table; hidden here unless debug logging (`-v`) is on."""
    from transformers.utils import logging as hf_logging
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        yield
        return
    before = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(before)
