"""Dynamic batching: concurrent requests to one model gathered into batches.

A Ray actor serving many search workers gets requests one state at a time. A model runs a
batch of states in little more time than one, so the actor's batcher waits for the first
request, then up to `max_wait_s` for more, until `max_batch_size` items are gathered, and runs
them in one call. The model call runs in one worker thread, so the event loop keeps taking
requests (the next batch fills while this one runs) and the model never runs twice at once.

Requests are never split: a request larger than the room left waits for the next batch, and
one larger than `max_batch_size` alone is a batch by itself. Achieved batch sizes are counted.
"""
from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class BatchingConfig:
    max_batch_size: int = 16  # items (states) per model call
    max_wait_ms: float = 10.0  # how long a batch waits for more requests once it has one


@dataclass
class _Request(Generic[T]):
    items: list[T]
    future: asyncio.Future


class DynamicBatcher(Generic[T, R]):
    """Runs `fn(items) -> results` (one result per item, in order) on batches of requests."""

    def __init__(self, fn: Callable[[list[T]], Sequence[R]], max_batch_size: int, max_wait_s: float) -> None:
        if max_batch_size <= 0:
            raise ValueError(f"max_batch_size must be positive, not {max_batch_size}")
        if max_wait_s < 0:
            raise ValueError(f"max_wait must be >= 0, not {max_wait_s}")
        self.fn = fn
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.sizes: Counter[int] = Counter()  # achieved batch size -> batches of that size
        self.requests_per_batch: Counter[int] = Counter()
        self.busy_s = 0.0  # time spent inside fn
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[_Request[T]] | None = None
        self._carry: _Request[T] | None = None
        self._task: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batch")

    async def submit(self, items: Sequence[T]) -> list[R]:
        """Results for `items`, computed in some batch together with other requests."""
        items = list(items)
        if not items:
            return []
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # an actor has one loop; a new loop starts afresh
            self._loop, self._queue, self._carry = loop, asyncio.Queue(), None
            self._task = None
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._serve())
        request = _Request(items, loop.create_future())
        self._queue.put_nowait(request)
        return await request.future

    async def _next(self, timeout: float | None) -> _Request[T] | None:
        if self._carry is not None:
            request, self._carry = self._carry, None
            return request
        assert self._queue is not None
        if timeout is None:
            return await self._queue.get()
        if timeout <= 0:
            try:
                return self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return None
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except asyncio.TimeoutError:
            return None

    async def _gather(self) -> list[_Request[T]]:
        loop = asyncio.get_running_loop()
        first = await self._next(None)
        batch, n = [first], len(first.items)
        deadline = loop.time() + self.max_wait_s
        while n < self.max_batch_size:
            request = await self._next(deadline - loop.time())
            if request is None:
                break
            if n + len(request.items) > self.max_batch_size:
                self._carry = request  # first in the next batch: requests are never split
                break
            batch.append(request)
            n += len(request.items)
        return batch

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._gather()
            live = [r for r in batch if not r.future.done()]  # a caller may have gone away
            if not live:
                continue
            flat = [x for r in live for x in r.items]
            t = loop.time()
            try:
                results = await loop.run_in_executor(self._executor, self.fn, flat)
                if len(results) != len(flat):
                    raise RuntimeError(f"batched function returned {len(results)} results for {len(flat)} items")
            except Exception as e:  # every caller of the batch sees the error; the server goes on
                log.warning("batch of %d failed: %s: %s", len(flat), type(e).__name__, e)
                for r in live:
                    if not r.future.done():
                        r.future.set_exception(e)
                continue
            finally:
                self.busy_s += loop.time() - t
            self.sizes[len(flat)] += 1
            self.requests_per_batch[len(live)] += 1
            start = 0
            for r in live:
                if not r.future.done():
                    r.future.set_result(list(results[start:start + len(r.items)]))
                start += len(r.items)

    def stats(self) -> dict[str, Any]:
        batches = sum(self.sizes.values())
        items = sum(size * n for size, n in self.sizes.items())
        return {
            "batches": batches, "items": items,
            "mean_batch_size": round(items / batches, 3) if batches else 0.0,
            "max_batch_size_seen": max(self.sizes, default=0),
            "batch_sizes": {str(k): v for k, v in sorted(self.sizes.items())},
            "requests_per_batch": {str(k): v for k, v in sorted(self.requests_per_batch.items())},
            "busy_s": round(self.busy_s, 3),
            "max_batch_size": self.max_batch_size, "max_wait_ms": self.max_wait_s * 1000,
        }
