"""Dynamic batching for the search's Ray actors: the project's one batcher, awaited from asyncio.

A Ray actor serving many search workers gets requests one state at a time. A model runs a
batch of states in little more time than one, so requests that arrive within `max_wait_s` of
each other, or while the model is busy, run as one call of at most `max_batch_size` states, on
the batcher's one model thread (prover/utils/batching.py, which the premise search service uses
too). The actor's event loop only awaits: it keeps taking requests while a batch runs.

Requests are never split: a request larger than the room left waits for the next batch, and
one larger than `max_batch_size` alone is a batch by itself. Achieved batch sizes are counted.
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from prover.utils.batching import Batcher

T = TypeVar("T")
R = TypeVar("R")


class DynamicBatcher(Generic[T, R]):
    """Runs `fn(items) -> results` (one result per item, in order) on batches of requests."""

    def __init__(self, fn: Callable[[list[T]], Sequence[R]], max_batch_size: int, max_wait_s: float) -> None:
        self.fn = fn
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.sizes: Counter[int] = Counter()  # achieved batch size -> batches of that size
        self.requests_per_batch: Counter[int] = Counter()
        self.busy_s = 0.0  # time spent inside fn
        self._lock = threading.Lock()
        # Each job is one request: a list of items, weighing its length.
        self._batcher = Batcher(self._run, max_batch_size, max_wait_s, name="batch", weight_of=len)

    async def submit(self, items: Sequence[T]) -> list[R]:
        """Results for `items`, computed in some batch together with other requests."""
        items = list(items)
        if not items:
            return []
        return await asyncio.wrap_future(self._batcher.submit(None, items))

    def _run(self, _key: Any, requests: list[list[T]]) -> list[list[R]]:
        flat = [x for r in requests for x in r]
        t = time.perf_counter()
        try:
            results = self.fn(flat)
        finally:
            with self._lock:
                self.busy_s += time.perf_counter() - t
        if len(results) != len(flat):
            raise RuntimeError(f"batched function returned {len(results)} results for {len(flat)} items")
        with self._lock:  # only batches that succeeded are counted
            self.sizes[len(flat)] += 1
            self.requests_per_batch[len(requests)] += 1
        out, start = [], 0
        for r in requests:
            out.append(list(results[start:start + len(r)]))
            start += len(r)
        return out

    def stats(self) -> dict[str, Any]:
        with self._lock:
            sizes, per_batch, busy = dict(self.sizes), dict(self.requests_per_batch), self.busy_s
        batches = sum(sizes.values())
        items = sum(size * n for size, n in sizes.items())
        return {
            "batches": batches, "items": items,
            "mean_batch_size": round(items / batches, 3) if batches else 0.0,
            "max_batch_size_seen": max(sizes, default=0),
            "batch_sizes": {str(k): v for k, v in sorted(sizes.items())},
            "requests_per_batch": {str(k): v for k, v in sorted(per_batch.items())},
            "busy_s": round(busy, 3),
            "max_batch_size": self.max_batch_size, "max_wait_ms": self.max_wait_s * 1000,
        }
