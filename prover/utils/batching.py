"""One model thread; requests that queue while it is busy run together as the next batch.

The one batcher of the project: the premise search service's HTTP requests
(prover/serve/service.py) and the proof search's Ray actors (prover/search/async_batcher.py, an
asyncio face on it) both go through it. A retriever embeds a batch of states in little more time
than one, but a search engine or a search worker sends one state per request. All model calls go
through one worker thread, so concurrent requests never run the model at once (on a small
machine, parallel forward passes only fight over the cores), and what queued up for the same
model meanwhile becomes one batch. With `max_wait_s = 0` a lone request never waits for
company: batching costs latency only when asked.

A job may weigh more than one (`weight_of`: a request of several states); a batch holds jobs
whose weights sum to at most the batch size, in their order, and a job heavier than the room
left waits for the next batch (one heavier than the batch size is a batch by itself).

Jobs carry a key (which model, and what it is asked); a batch holds one key, and other keys
keep their place. A key may have its own batch size, and a caller may bound how many jobs of
its key wait: past the bound `submit` raises `QueueFull` at once, with an estimate of when to
come back, so a request is refused quickly instead of waiting longer the more others wait.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class BatchingConfig:
    """How the batcher batches: the one batching settings type (`batching:` of the search and
    of the service; the service's defaults are its own, see prover/serve/settings.py)."""

    max_batch_size: int = 16  # items (states) per model call
    # How long a lone request waits for company. 0: it runs as soon as the model is free, and
    # requests that queued meanwhile form the next batch, so batching costs no latency.
    max_wait_ms: float = 10.0
    # Requests of one model waiting behind the running batch; past it a request gets 503 and
    # Retry-After at once, instead of a wait that grows with the queue. 0: no bound. The
    # service bounds its queues; the search's actors take every request (their callers are few).
    max_queued: int = 0


class QueueFull(Exception):
    """Too many jobs of one key are waiting; `retry_after_s` estimates when the queue drains."""

    def __init__(self, key: Hashable, queued: int, retry_after_s: int) -> None:
        super().__init__(f"{queued} jobs of {key!r} are waiting")
        self.key = key
        self.queued = queued
        self.retry_after_s = retry_after_s


@dataclass
class _Job:
    key: Hashable
    item: Any
    future: Future


class Batcher:
    """Runs `run(key, items) -> results` (one result per item, in order) on a worker thread.
    A result that is an Exception is raised to that item's caller alone."""

    def __init__(self, run: Callable[[Hashable, list[Any]], Sequence[Any]], max_batch_size: int = 32,
                 max_wait_s: float = 0.0, name: str = "serve-model",
                 batch_size_of: Callable[[Hashable], int | None] | None = None,
                 weight_of: Callable[[Any], int] | None = None) -> None:
        """`batch_size_of(key)`, when given and not None for a key, is that key's batch size;
        `weight_of(item)` what a job counts toward it (default 1)."""
        if max_batch_size <= 0:
            raise ValueError(f"max_batch_size must be positive, not {max_batch_size}")
        if max_wait_s < 0:
            raise ValueError(f"max_wait must be >= 0, not {max_wait_s}")
        self.run = run
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.batch_size_of = batch_size_of
        self.weight_of = weight_of or (lambda item: 1)
        self.batches = 0
        self.items = 0
        self.largest = 0
        self.refused = 0
        self._batch_seconds: dict[Hashable, float] = {}  # per key, a moving average
        self._jobs: deque[_Job] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def batch_size(self, key: Hashable) -> int:
        size = self.batch_size_of(key) if self.batch_size_of is not None else None
        return size or self.max_batch_size

    def submit(self, key: Hashable, item: Any, max_queued: int | None = None) -> Future:
        """A future of `item`'s result, computed in some batch of jobs with the same key.
        With `max_queued`, raises QueueFull if that many jobs of `key` are already waiting
        (the batch running now is not waiting)."""
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the service is shutting down")
            if max_queued:
                queued = self._same_key(key)
                if queued >= max_queued:
                    self.refused += 1
                    raise QueueFull(key, queued, self._drain_estimate(key, queued))
            self._jobs.append(_Job(key, item, future))
            self._cond.notify_all()
        return future

    def _drain_estimate(self, key: Hashable, queued: int) -> int:
        """Whole seconds until `queued` jobs of `key` and the running batch are done (at least 1):
        what a refused caller is told to wait."""
        batches = math.ceil(queued / self.batch_size(key)) + 1
        return max(1, math.ceil(batches * self._batch_seconds.get(key, 0.0)))

    def stats(self) -> dict:
        with self._cond:
            return {"batches": self.batches, "items": self.items, "largest_batch": self.largest,
                    "mean_batch": round(self.items / self.batches, 2) if self.batches else 0.0,
                    "queued": len(self._jobs), "refused": self.refused}

    def close(self, timeout: float = 30.0) -> None:
        """Stop taking jobs, finish the queued ones, stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _same_key(self, key: Hashable) -> int:
        return sum(1 for j in self._jobs if j.key == key)

    def _same_key_weight(self, key: Hashable) -> int:
        return sum(self.weight_of(j.item) for j in self._jobs if j.key == key)

    def _take(self) -> list[_Job] | None:
        with self._cond:
            while not self._jobs and not self._closed:
                self._cond.wait()
            if not self._jobs:
                return None  # closed and drained
            key = self._jobs[0].key
            size = self.batch_size(key)
            deadline = time.monotonic() + self.max_wait_s
            while not self._closed and self._same_key_weight(key) < size:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            batch: list[_Job] = []
            rest: deque[_Job] = deque()
            room, full = size, False
            for job in self._jobs:
                w = self.weight_of(job.item)
                if job.key == key and not full and (not batch or w <= room):
                    batch.append(job)
                    room -= w
                else:
                    full = full or job.key == key  # jobs of this key keep their order
                    rest.append(job)
            self._jobs = rest
            return batch

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            # A job whose caller gave up (a client that disconnected) is dropped here.
            live = [j for j in batch if j.future.set_running_or_notify_cancel()]
            if not live:
                continue
            t0 = time.perf_counter()
            try:
                results = self.run(live[0].key, [j.item for j in live])
                if len(results) != len(live):
                    raise RuntimeError(f"batch of {len(live)} gave {len(results)} results")
            except BaseException as e:  # every waiting caller must hear of it
                log.exception("batch of %d failed", len(live))
                for j in live:
                    j.future.set_exception(e)
                continue
            seconds = time.perf_counter() - t0
            with self._cond:
                last = self._batch_seconds.get(live[0].key)
                self._batch_seconds[live[0].key] = seconds if last is None else 0.8 * last + 0.2 * seconds
                self.batches += 1
                self.items += len(live)
                self.largest = max(self.largest, len(live))
            for j, r in zip(live, results):
                # An exception as a result is that one job's failure: the rest of its batch stands.
                if isinstance(r, Exception):
                    j.future.set_exception(r)
                else:
                    j.future.set_result(r)
