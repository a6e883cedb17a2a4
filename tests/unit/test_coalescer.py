"""The coalescer's bookkeeping, with a fake flush (no database: this is pure logic)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from mq.queue.coalescer import Coalescer


class Recorder:
    def __init__(self, fail_on: set[int] | None = None, delay: float = 0.01) -> None:
        self.batches: list[list[int]] = []
        self.fail_on = fail_on or set()
        self.delay = delay

    async def flush(self, items: Sequence[int]) -> list[int | BaseException]:
        self.batches.append(list(items))
        await asyncio.sleep(self.delay)
        if len(items) > 1 and self.fail_on & set(items):
            raise RuntimeError("the whole statement failed")
        return [ValueError(f"bad {i}") if i in self.fail_on else i * 10 for i in items]


async def test_concurrent_submissions_share_flushes_and_get_their_own_results() -> None:
    recorder = Recorder()
    coalescer = Coalescer(recorder.flush, max_batch=100, max_in_flight=1)
    results = await asyncio.gather(*(coalescer.submit(i) for i in range(50)))
    assert results == [i * 10 for i in range(50)]
    assert len(recorder.batches) < 50
    assert sorted(i for batch in recorder.batches for i in batch) == list(range(50))


async def test_batches_respect_max_batch_and_in_flight() -> None:
    recorder = Recorder()
    coalescer = Coalescer(recorder.flush, max_batch=7, max_in_flight=2)
    await asyncio.gather(*(coalescer.submit(i) for i in range(40)))
    assert max(len(b) for b in recorder.batches) <= 7


async def test_a_bad_item_fails_only_its_own_caller() -> None:
    recorder = Recorder(fail_on={3})
    coalescer = Coalescer(recorder.flush, max_batch=100, max_in_flight=1)
    results = await asyncio.gather(*(coalescer.submit(i) for i in range(6)), return_exceptions=True)
    assert [r for r in results if isinstance(r, BaseException)] == [results[3]]
    assert isinstance(results[3], ValueError)
    assert [r for i, r in enumerate(results) if i != 3] == [0, 10, 20, 40, 50]


async def test_a_lone_submission_is_flushed_without_waiting_for_company() -> None:
    recorder = Recorder(delay=0)
    coalescer = Coalescer(recorder.flush, max_batch=100, max_in_flight=4)
    assert await asyncio.wait_for(coalescer.submit(1), 1) == 10
    assert recorder.batches == [[1]]


async def test_a_cancelled_caller_does_not_break_the_others() -> None:
    recorder = Recorder(delay=0.05)
    coalescer = Coalescer(recorder.flush, max_batch=100, max_in_flight=1)
    first = asyncio.create_task(coalescer.submit(1))
    second = asyncio.create_task(coalescer.submit(2))
    await asyncio.sleep(0)
    first.cancel()
    assert await second == 20
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_weight_bounds_a_flush_and_a_heavy_item_goes_alone() -> None:
    recorder = Recorder()
    coalescer = Coalescer(recorder.flush, max_batch=10, max_in_flight=1, weight=lambda i: i)
    await asyncio.gather(*(coalescer.submit(i) for i in [4, 4, 4, 50, 1, 1]))
    assert all(sum(b) <= 10 or len(b) == 1 for b in recorder.batches)
    assert [50] in recorder.batches
