"""One model thread; requests that queue while it is busy run together as the next batch.

A retriever embeds a batch of states in little more time than one, but a search engine gets
one state per request. All model calls go through one worker thread, so concurrent HTTP
requests never run the model at once (on a small machine, parallel forward passes only fight
over the cores), and what queued up for the same retriever meanwhile becomes one batch. With
`max_wait_s = 0` a lone request never waits for company: batching costs latency only when asked.

Jobs carry a key (which retriever); a batch holds one key, and other keys keep their place.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class _Job:
    key: Hashable
    item: Any
    future: Future


class Batcher:
    """Runs `run(key, items) -> results` (one result per item, in order) on a worker thread."""

    def __init__(self, run: Callable[[Hashable, list[Any]], Sequence[Any]], max_batch_size: int = 32,
                 max_wait_s: float = 0.0, name: str = "serve-model") -> None:
        if max_batch_size <= 0:
            raise ValueError(f"max_batch_size must be positive, not {max_batch_size}")
        if max_wait_s < 0:
            raise ValueError(f"max_wait must be >= 0, not {max_wait_s}")
        self.run = run
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.batches = 0
        self.items = 0
        self.largest = 0
        self._jobs: deque[_Job] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, key: Hashable, item: Any) -> Future:
        """A future of `item`'s result, computed in some batch of jobs with the same key."""
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the service is shutting down")
            self._jobs.append(_Job(key, item, future))
            self._cond.notify_all()
        return future

    def stats(self) -> dict:
        with self._cond:
            return {"batches": self.batches, "items": self.items, "largest_batch": self.largest,
                    "mean_batch": round(self.items / self.batches, 2) if self.batches else 0.0,
                    "queued": len(self._jobs)}

    def close(self, timeout: float = 30.0) -> None:
        """Stop taking jobs, finish the queued ones, stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _same_key(self, key: Hashable) -> int:
        return sum(1 for j in self._jobs if j.key == key)

    def _take(self) -> list[_Job] | None:
        with self._cond:
            while not self._jobs and not self._closed:
                self._cond.wait()
            if not self._jobs:
                return None  # closed and drained
            key = self._jobs[0].key
            deadline = time.monotonic() + self.max_wait_s
            while not self._closed and self._same_key(key) < self.max_batch_size:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            batch: list[_Job] = []
            rest: deque[_Job] = deque()
            for job in self._jobs:
                (batch if job.key == key and len(batch) < self.max_batch_size else rest).append(job)
            self._jobs = rest
            return batch

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            # A job whose caller gave up (a client that disconnected) is dropped here.
            live = [j for j in batch if j.future.set_running_or_notify_cancel()]
            if not live:
                continue
            try:
                results = self.run(live[0].key, [j.item for j in live])
                if len(results) != len(live):
                    raise RuntimeError(f"batch of {len(live)} gave {len(results)} results")
            except BaseException as e:  # every waiting caller must hear of it
                log.exception("batch of %d failed", len(live))
                for j in live:
                    j.future.set_exception(e)
                continue
            with self._cond:
                self.batches += 1
                self.items += len(live)
                self.largest = max(self.largest, len(live))
            for j, r in zip(live, results):
                j.future.set_result(r)
