"""`SearchService`: the corpus and the named retrievers, searched safely from many threads.

Requests are checked here (so the FastAPI app and the Ray Serve deployment refuse the same
things with the same messages), then handed to one model thread (`Batcher`). What is searched
is one `Loaded` generation; `reload()` builds the next one beside it while the current one
keeps answering, then swaps the reference, so a search never sees half a reload.
"""
from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import Hashable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from prover.data.errors import DataError
from prover.data.premise import Premise
from prover.serve.batching import Batcher
from prover.serve.errors import BadRequest, Conflict, Forbidden, NotFound, StateTooLong
from prover.serve.loading import RERANK_SUFFIX, Loaded, load
from retriever.base import RankedPremise
from retriever.faiss_index import StaleIndexError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchResult:
    retriever: str  # the first stage
    rerank: bool
    k: int
    hits: list[RankedPremise]
    generation: int  # which load answered (it changes on reload)
    seconds: float  # from submission to answer, queueing included


class SearchService:
    """Thread-safe premise search over the retrievers named in a `ServeConfig`."""

    def __init__(self, cfg: Any, loaded: Loaded | None = None) -> None:
        self.cfg = cfg
        if cfg.threads:
            import torch
            torch.set_num_threads(int(cfg.threads))
        self._loaded = loaded if loaded is not None else load(cfg)
        self.default_retriever = cfg.default_retriever or list(cfg.retrievers)[0]
        self._reload_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._counts = {"searches": 0, "rejected": 0, "failed": 0, "reloads": 0}
        self._batcher = Batcher(self._run_batch, cfg.batching.max_batch_size,
                                cfg.batching.max_wait_ms / 1000.0)
        self.started_at = time.time()

    @property
    def loaded(self) -> Loaded:
        return self._loaded

    @property
    def rerank_available(self) -> bool:
        return bool(self._loaded.rerankers)

    def retriever_names(self) -> list[str]:
        return list(self._loaded.first_stages)

    # --- checking requests ------------------------------------------------------------------
    def _count(self, key: str) -> None:
        with self._stats_lock:
            self._counts[key] += 1

    def _resolve(self, retriever: str | None, rerank: bool | None) -> tuple[str, bool]:
        name = retriever if retriever is not None else self.default_retriever
        rerank = bool(rerank)
        if isinstance(name, str) and name.endswith(RERANK_SUFFIX):
            if name[: -len(RERANK_SUFFIX)] in self._loaded.first_stages:
                name, rerank = name[: -len(RERANK_SUFFIX)], True
        if name not in self._loaded.first_stages:
            raise BadRequest(f"unknown retriever {name!r}; this service has "
                             f"{', '.join(self.retriever_names())}", "retriever")
        if rerank and not self._loaded.rerankers:
            raise BadRequest("re-ranking is not available: the service was started without a CAR "
                             "model (rerank=false)", "rerank")
        return name, rerank

    def _check(self, state: str, k: int | None) -> int:
        limits = self.cfg.limits
        if not isinstance(state, str) or not state.strip():
            raise BadRequest("state is empty: paste a proof state (hypotheses, then ⊢ goal) or a "
                             "statement", "state")
        if len(state) > limits.max_state_chars:
            raise StateTooLong(f"state has {len(state):,} characters; the limit is "
                               f"{limits.max_state_chars:,}", "state")
        k = limits.default_k if k is None else k
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= limits.max_k:
            raise BadRequest(f"k must be an integer from 1 to {limits.max_k}, not {k!r}", "k")
        return k

    # --- searching --------------------------------------------------------------------------
    def submit(self, state: str, k: int | None = None, rerank: bool | None = None,
               retriever: str | None = None) -> Future:
        """Check the request (a ServiceError if bad) and queue it; the future holds a SearchResult."""
        try:
            k = self._check(state, k)
            name, rerank = self._resolve(retriever, rerank)
        except (BadRequest, StateTooLong):
            self._count("rejected")
            raise
        return self._batcher.submit((name, rerank), (state, k, time.perf_counter()))

    def search(self, state: str, k: int | None = None, rerank: bool | None = None,
               retriever: str | None = None) -> SearchResult:
        """The k best premises for `state`: blocking form of `submit`."""
        return self.submit(state, k, rerank, retriever).result()

    def _run_batch(self, key: Hashable, items: list[tuple[str, int, float]]) -> list[SearchResult]:
        name, rerank = key
        loaded = self._loaded  # one generation for the whole batch, even if a reload swaps now
        states = [s for s, _, _ in items]
        try:
            # A search engine has no theorem context: every premise of the corpus is a candidate.
            ranked = loaded.get(name, rerank).retrieve(states, max(k for _, k, _ in items),
                                                       [None] * len(states))
        except Exception:
            self._count("failed")
            raise
        done = time.perf_counter()
        with self._stats_lock:
            self._counts["searches"] += len(items)
        return [SearchResult(name, rerank, k, hits[:k], loaded.generation, done - t0)
                for (_, k, t0), hits in zip(items, ranked)]

    def premises(self, full_name: str) -> list[Premise]:
        """Every premise called `full_name` (a few names are declared in more than one file)."""
        loaded = self._loaded
        hits = loaded.corpus.by_name.get(full_name)
        if not hits:
            raise NotFound(f"no premise named {full_name!r} in the corpus ({len(loaded.corpus):,} premises)",
                           "full_name")
        return [loaded.corpus.premises[i] for i in hits]

    # --- administration ---------------------------------------------------------------------
    def check_token(self, token: str | None) -> None:
        """Admin calls need the configured token; with none configured they do not exist."""
        want = self.cfg.admin_token
        if not want:
            raise NotFound("admin endpoints are disabled: start the service with admin_token set "
                           "(e.g. PROVER_SERVE_TOKEN in the environment)")
        if not token or not hmac.compare_digest(token.encode(), str(want).encode()):
            raise Forbidden("missing or wrong admin token (send it as 'Authorization: Bearer <token>')")

    def reload(self, index: str | None = None, corpus: str | None = None) -> dict:
        """Rebuild corpus and retrievers from `index`/`corpus` (default: the current ones) and
        swap them in. Until the swap, and for good if the load fails, the current ones answer."""
        if not self._reload_lock.acquire(blocking=False):
            raise Conflict("a reload is already running")
        try:
            current = self._loaded
            index = index if index is not None else current.index_path
            corpus = corpus if corpus is not None else current.corpus_path
            try:
                new = load(self.cfg, index, corpus, current.generation + 1)
            except StaleIndexError as e:
                raise Conflict(f"reload refused, still serving generation {current.generation}: {e}") from e
            except (OSError, ValueError, KeyError, DataError) as e:
                raise BadRequest(f"reload failed, still serving generation {current.generation}: "
                                 f"{type(e).__name__}: {e}") from e
            self._loaded = new
            self._count("reloads")
            log.info("reloaded: generation %d, %d premises from %s", new.generation, len(new.corpus), corpus)
            return self._describe(new)
        finally:
            self._reload_lock.release()

    # --- reporting --------------------------------------------------------------------------
    @staticmethod
    def _describe(loaded: Loaded) -> dict:
        return {"generation": loaded.generation, "corpus": loaded.corpus_path, "index": loaded.index_path,
                "n_premises": len(loaded.corpus), "n_files": len(loaded.corpus.files),
                "load_seconds": loaded.load_seconds, "loaded_at": loaded.loaded_at}

    def health(self) -> dict:
        loaded = self._loaded
        with self._stats_lock:
            counts = dict(self._counts)
        limits = self.cfg.limits
        return {"status": "ok", **self._describe(loaded), "retrievers": self.retriever_names(),
                "default_retriever": self.default_retriever, "rerank": bool(loaded.rerankers),
                "limits": {"max_state_chars": limits.max_state_chars, "max_k": limits.max_k,
                           "default_k": limits.default_k},
                "admin": bool(self.cfg.admin_token), "uptime_s": round(time.time() - self.started_at, 1),
                "counts": counts, "batching": self._batcher.stats()}

    def close(self) -> None:
        self._batcher.close()
