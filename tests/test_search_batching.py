"""Dynamic batching of concurrent requests (the retriever and generator actors' batcher)."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from prover.search.async_batcher import DynamicBatcher


class Model:
    """Records the batches it is called with; answers 10 * item."""

    def __init__(self, delay: float = 0.0, fail_on: int | None = None, wrong_count: bool = False):
        self.batches: list[list[int]] = []
        self.delay = delay
        self.fail_on = fail_on
        self.wrong_count = wrong_count
        self.threads: set[str] = set()

    def __call__(self, items: list[int]) -> list[int]:
        self.threads.add(threading.current_thread().name)
        self.batches.append(list(items))
        if self.delay:
            time.sleep(self.delay)
        if self.fail_on is not None and self.fail_on in items:
            raise RuntimeError(f"bad item {self.fail_on}")
        out = [10 * x for x in items]
        return out[:-1] if self.wrong_count else out


def run(coro):
    return asyncio.run(coro)


def test_concurrent_requests_share_a_batch_and_get_their_own_results():
    model = Model()
    b = DynamicBatcher(model, max_batch_size=8, max_wait_s=0.2)

    async def main():
        return await asyncio.gather(*(b.submit([i, 100 + i]) for i in range(3)))

    assert run(main()) == [[0, 1000], [10, 1010], [20, 1020]]
    assert model.batches == [[0, 100, 1, 101, 2, 102]]
    stats = b.stats()
    assert (stats["batches"], stats["items"], stats["mean_batch_size"]) == (1, 6, 6.0)
    assert stats["batch_sizes"] == {"6": 1} and stats["requests_per_batch"] == {"3": 1}
    assert model.threads and all(t.startswith("batch") for t in model.threads)  # off the event loop


def test_max_batch_size_and_requests_are_never_split():
    model = Model()
    b = DynamicBatcher(model, max_batch_size=4, max_wait_s=0.2)

    async def main(sizes):
        return await asyncio.gather(*(b.submit(list(range(n))) for n in sizes))

    run(main([1] * 10))
    assert [len(x) for x in model.batches] == [4, 4, 2]
    model.batches.clear()
    out = run(main([3, 3, 6]))
    assert [len(x) for x in model.batches] == [3, 3, 6]  # a 6 alone: larger than the max
    assert out == [[0, 10, 20], [0, 10, 20], [0, 10, 20, 30, 40, 50]]
    assert b.stats()["max_batch_size_seen"] == 6


def test_requests_arriving_while_a_batch_runs_form_the_next_batch():
    model = Model(delay=0.3)
    b = DynamicBatcher(model, max_batch_size=8, max_wait_s=0.0)

    async def main():
        first = asyncio.ensure_future(b.submit([1]))
        await asyncio.sleep(0.1)  # the first batch (alone: no wait) is running now
        rest = [asyncio.ensure_future(b.submit([i])) for i in (2, 3)]
        return await asyncio.gather(first, *rest)

    assert run(main()) == [[10], [20], [30]]
    assert model.batches == [[1], [2, 3]]


def test_no_wait_means_no_waiting():
    model = Model()
    b = DynamicBatcher(model, max_batch_size=8, max_wait_s=0.0)

    async def main():
        t = time.monotonic()
        out = await b.submit([5])
        return out, time.monotonic() - t

    out, took = run(main())
    assert out == [50] and took < 1.0  # no max_wait to sit out (generous: a busy machine)


def test_a_failing_batch_fails_its_callers_and_the_batcher_goes_on():
    model = Model(fail_on=2)
    b = DynamicBatcher(model, max_batch_size=8, max_wait_s=0.1)

    async def main():
        results = await asyncio.gather(b.submit([1]), b.submit([2]), return_exceptions=True)
        after = await b.submit([3])
        return results, after

    results, after = run(main())
    assert all(isinstance(r, RuntimeError) and "bad item 2" in str(r) for r in results)
    assert after == [30]
    assert b.stats()["batches"] == 1  # only successful batches are counted


def test_wrong_result_count_is_an_error():
    b = DynamicBatcher(Model(wrong_count=True), max_batch_size=4, max_wait_s=0.0)
    with pytest.raises(RuntimeError, match="returned 1 results for 2 items"):
        run(b.submit([1, 2]))


def test_empty_request_and_bad_settings():
    b = DynamicBatcher(Model(), max_batch_size=4, max_wait_s=0.0)
    assert run(b.submit([])) == []
    with pytest.raises(ValueError, match="max_batch_size"):
        DynamicBatcher(Model(), max_batch_size=0, max_wait_s=0.0)
    with pytest.raises(ValueError, match="max_wait"):
        DynamicBatcher(Model(), max_batch_size=1, max_wait_s=-1)
