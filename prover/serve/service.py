"""`SearchService`: the corpus, the named retrievers and generators, used safely from many threads.

Requests are checked here (so the FastAPI app and the Ray Serve deployment refuse the same
things with the same messages), then handed to one model thread (`Batcher`): searches,
LeanCopilot's tactic generations and state encodings take turns on it, each kind batched with
its own kind. Each key has a bound on waiting requests; past it a request is refused at once
(503, `Overloaded`) instead of waiting longer the more others wait. What is searched is one
`Loaded` generation; `reload()` builds the next one beside it while the current one keeps
answering, then swaps the reference, so a search never sees half a reload.
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

from prover.data.errors import DataError, UserInputError
from prover.data.premise import Premise
from prover.utils.batching import Batcher, QueueFull
from prover.serve.context import ResolvedContext, context_fits, resolve_context
from prover.serve.errors import (BadRequest, Conflict, Forbidden, NotFound, Overloaded, ServiceError,
                                 StateTooLong)
from prover.serve.generation import Encoded, Generated, ServedGenerator, can_encode, load_generators
from prover.serve.loading import RERANK_SUFFIX, Loaded, load
from retriever.base import RankedPremise
from retriever.models.faiss_index import StaleIndexError

log = logging.getLogger(__name__)
INFORMAL = "informal"  # the retriever `"mode": "informal"` requests are answered by


@dataclass(frozen=True)
class SearchResult:
    retriever: str  # the first stage
    rerank: bool
    k: int
    hits: list[RankedPremise]
    generation: int  # which load answered (it changes on reload)
    seconds: float  # from submission to answer, queueing included
    context: ResolvedContext | None = None  # where the search came from, if it said
    matched: list[list[str]] | None = None  # informal search: each hit's matched query words
    docs: list[str] | None = None  # informal search: each hit's docstring (joined from its docs)


class SearchService:
    """Thread-safe premise search over the retrievers named in a `ServeConfig`, and LeanCopilot's
    generation (its `generators`) and encoding (its dense retrievers)."""

    def __init__(self, cfg: Any, loaded: Loaded | None = None,
                 generators: dict[str, ServedGenerator] | None = None) -> None:
        self.cfg = cfg
        if cfg.threads:
            import torch
            torch.set_num_threads(int(cfg.threads))
        # Generators first: a wrong model folder is told before seconds of corpus loading.
        self.generators = (generators if generators is not None
                           else load_generators(cfg.generators, cfg.retriever.device))
        self._loaded = loaded if loaded is not None else load(cfg)
        # retriever.name unset (empty): the first served retriever (loading checks a set one).
        self.default_retriever = cfg.retriever.name or list(cfg.retrievers)[0]
        self.default_k = cfg.retriever.k
        for g in self.generators.values():
            if g.cfg.premises is not None:  # a typo here should stop the start, not fail every request
                try:
                    self._resolve(g.cfg.premises.name, False)
                except BadRequest as e:
                    raise UserInputError(f"generator {g.name!r} takes premises from "
                                         f"{g.cfg.premises.name!r}: {e.message}") from None
        self._reload_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._counts = {"searches": 0, "generations": 0, "encodings": 0, "rejected": 0, "shed": 0,
                        "failed": 0, "reloads": 0}
        self._batcher = Batcher(self._run_batch, cfg.batching.max_batch_size,
                                cfg.batching.max_wait_ms / 1000.0, batch_size_of=self._batch_size)
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
        if name == INFORMAL and name not in self._loaded.first_stages:
            raise BadRequest("informal search is not loaded in this service: start it with informal among its "
                             "retrievers (`--retrievers bm25,informal`, or `retrievers:` in its config; "
                             "configs/serve/demo.yaml loads it)", "mode")
        if name not in self._loaded.first_stages:
            raise BadRequest(f"unknown retriever {name!r}; this service has "
                             f"{', '.join(self.retriever_names())}", "retriever")
        if rerank and not self._loaded.rerankers:
            raise BadRequest("re-ranking is not available: the service was started without a CAR "
                             "model (load_car=false, or none in the run folder)", "rerank")
        return name, rerank

    def _check_text(self, text: str, field: str) -> None:
        limits = self.cfg.limits
        if not isinstance(text, str) or not text.strip():
            raise BadRequest(f"{field} is empty: paste a proof state (hypotheses, then ⊢ goal) or a "
                             "statement", field)
        if len(text) > limits.max_state_chars:
            raise StateTooLong(f"{field} has {len(text):,} characters; the limit is "
                               f"{limits.max_state_chars:,}", field)

    def _check(self, state: str, k: int | None) -> int:
        limits = self.cfg.limits
        self._check_text(state, "state")
        k = self.default_k if k is None else k
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= limits.max_k:
            raise BadRequest(f"k must be an integer from 1 to {limits.max_k}, not {k!r}", "k")
        return k

    def _queue(self, key: tuple, item: tuple, max_queued: int, what: str) -> Future:
        try:
            return self._batcher.submit(key, item, max_queued)
        except QueueFull as e:
            self._count("shed")
            raise Overloaded(f"{what} has {e.queued} requests waiting, its limit; retry in "
                             f"{e.retry_after_s} s", e.retry_after_s) from None

    def _batch_size(self, key: Hashable) -> int | None:
        if key[0] == "generate":
            return self.generators[key[1]].cfg.batching.max_batch_size
        return None  # searches and encodings: batching.max_batch_size

    # --- searching --------------------------------------------------------------------------
    def submit(self, state: str, k: int | None = None, rerank: bool | None = None,
               retriever: str | None = None, file_path: str | None = None,
               position: list[int] | None = None, imports: list[str] | None = None) -> Future:
        """Check the request (a ServiceError if bad) and queue it; the future holds a SearchResult.
        With `file_path` (and `position`, default: the end of the file) or `imports`, only the
        premises accessible there are ranked."""
        try:
            k = self._check(state, k)
            name, rerank = self._resolve(retriever, rerank)
            context = resolve_context(self._loaded.corpus, file_path, position, imports)
        except (BadRequest, StateTooLong):
            self._count("rejected")
            raise
        return self._queue(("search", name, rerank), (state, k, context, time.perf_counter()),
                           self.cfg.batching.max_queued, f"retriever {name}{RERANK_SUFFIX if rerank else ''}")

    def search(self, state: str, k: int | None = None, rerank: bool | None = None,
               retriever: str | None = None, file_path: str | None = None,
               position: list[int] | None = None, imports: list[str] | None = None) -> SearchResult:
        """The k best premises for `state`: blocking form of `submit`."""
        return self.submit(state, k, rerank, retriever, file_path, position, imports).result()

    # --- LeanCopilot: generating and encoding -------------------------------------------------
    def generator_names(self) -> list[str]:
        return list(self.generators)

    def encoder_names(self) -> list[str]:
        return [n for n, r in self._loaded.first_stages.items() if can_encode(r)]

    def submit_generate(self, name: str, state: str, prefix: str | None = None) -> Future:
        """Check a LeanCopilot generation request and queue it; the future holds a Generated."""
        prefix = prefix or ""
        try:
            generator = self.generators.get(name)
            if generator is None:
                have = ", ".join(self.generators) or "none (start it with generators=[...])"
                raise NotFound(f"unknown generator {name!r}; this service has: {have}", "name")
            self._check_text(state, "input")
            generator.check_prefix(prefix)
        except ServiceError:
            self._count("rejected")
            raise
        return self._queue(("generate", name), (state, prefix, time.perf_counter()),
                           generator.cfg.batching.max_queued, f"generator {name!r}")

    def generate(self, name: str, state: str, prefix: str | None = None) -> Generated:
        return self.submit_generate(name, state, prefix).result()

    def submit_encode(self, name: str, state: str) -> Future:
        """Check a LeanCopilot encoding request and queue it; the future holds an Encoded."""
        try:
            if name not in self.encoder_names():
                why = (f" ({name} ranks without a state embedding)" if name in self._loaded.first_stages
                       else "")
                raise NotFound(f"no encoder named {name!r}{why}; this service encodes with: "
                               f"{', '.join(self.encoder_names()) or 'none (serve cfr or reprover)'}", "name")
            self._check_text(state, "input")
        except ServiceError:
            self._count("rejected")
            raise
        return self._queue(("encode", name), (state, time.perf_counter()),
                           self.cfg.batching.max_queued, f"encoder {name!r}")

    def encode(self, name: str, state: str) -> Encoded:
        return self.submit_encode(name, state).result()

    # --- the model thread -----------------------------------------------------------------------
    def _run_batch(self, key: Hashable, items: list[tuple]) -> list[Any]:
        run = {"search": self._run_search, "generate": self._run_generate, "encode": self._run_encode}[key[0]]
        try:
            return run(key, items)
        except Exception:
            self._count("failed")
            raise

    def _run_search(self, key: tuple, items: list[tuple]) -> list[SearchResult | Exception]:
        _, name, rerank = key
        loaded = self._loaded  # one generation for the whole batch, even if a reload swaps now
        # A context was checked against the corpus of its submission; a reload since may have
        # dropped its files. Such a request fails alone, and the rest of the batch is answered.
        out: list[SearchResult | Exception] = [
            Conflict("the corpus was reloaded while this search waited, and the new one lacks its "
                     "file; send it again", "file_path")
            if c is not None and not context_fits(loaded.corpus, c) else None for _, _, c, _ in items]
        todo = [i for i, r in enumerate(out) if r is None]
        if todo:
            ranked = loaded.get(name, rerank).retrieve(
                [items[i][0] for i in todo], max(items[i][1] for i in todo),
                [items[i][2].context if items[i][2] is not None else None for i in todo])
            done = time.perf_counter()
            retriever = loaded.get(name, rerank)
            for i, hits in zip(todo, ranked):
                state, k, c, t0 = items[i]
                why = None
                if hasattr(retriever, "matched"):  # the informal retriever says why each hit matched
                    why = (retriever.matched(state, [h.index for h in hits[:k]]),
                           [retriever.docs[h.index] for h in hits[:k]])
                out[i] = SearchResult(name, rerank, k, hits[:k], loaded.generation, done - t0, c,
                                      *(why or (None, None)))
        with self._stats_lock:
            self._counts["searches"] += len(todo)
        return out

    def _run_generate(self, key: tuple, items: list[tuple]) -> list[Generated]:
        generator = self.generators[key[1]]
        states = [s for s, _, _ in items]
        premises: list[list[Premise]] = [[] for _ in items]
        if generator.cfg.premises is not None:
            name, rerank = self._resolve(generator.cfg.premises.name, False)
            ranked = self._loaded.get(name, rerank).retrieve(states, generator.cfg.premises.k,
                                                             [None] * len(states))
            premises = [[h.premise for h in hits] for hits in ranked]
        rows = generator.generate(states, [p for _, p, _ in items], premises)
        done = time.perf_counter()
        with self._stats_lock:
            self._counts["generations"] += len(items)
        return [Generated(generator.name, row, done - t0) for (_, _, t0), row in zip(items, rows)]

    def _run_encode(self, key: tuple, items: list[tuple]) -> list[Encoded]:
        vectors = self._loaded.first_stages[key[1]].encode_states([s for s, _ in items])
        done = time.perf_counter()
        with self._stats_lock:
            self._counts["encodings"] += len(items)
        return [Encoded(key[1], [float(x) for x in v], done - t0) for (_, t0), v in zip(items, vectors)]

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
                "generators": self.generator_names(), "encoders": self.encoder_names(),
                "limits": {"max_state_chars": limits.max_state_chars, "max_k": limits.max_k,
                           "default_k": self.default_k},
                "admin": bool(self.cfg.admin_token), "uptime_s": round(time.time() - self.started_at, 1),
                "counts": counts, "batching": self._batcher.stats()}

    def close(self) -> None:
        self._batcher.close()
