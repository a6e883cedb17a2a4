"""The coalescer's bookkeeping, with a fake flush (no database: this is pure logic)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from mq.queue.coalescer import Coalescer
from mq.queue.shared import _per_group


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


async def test_a_flush_that_raises_fails_its_callers_and_is_not_run_again() -> None:
    recorder = Recorder(fail_on={3})
    coalescer = Coalescer(recorder.flush, max_batch=100, max_in_flight=1)
    results = await asyncio.gather(*(coalescer.submit(i) for i in range(6)), return_exceptions=True)
    failed_batches = [b for b in recorder.batches if 3 in b]
    assert len(failed_batches) == 1  # never re-run: it may have written part of its work
    assert all(isinstance(results[i], RuntimeError) for i in failed_batches[0])


async def test_per_group_retries_a_failed_statement_request_by_request_and_never_reruns_a_good_one() -> None:
    runs: list[tuple[str, list[int]]] = []

    async def run(group: str, chosen: list[int]) -> list[int]:
        runs.append((group, list(chosen)))
        if 13 in chosen and len(chosen) > 1:
            raise RuntimeError("the shared statement failed")
        if 13 in chosen:
            raise ValueError("bad 13")
        return [c * 10 for c in chosen]

    requests = [1, 11, 2, 12, 13]
    outcomes = await _per_group(requests, lambda r: "low" if r < 10 else "high", run)
    assert outcomes[:4] == [10, 110, 20, 120]
    assert isinstance(outcomes[4], ValueError)
    assert runs.count(("low", [1, 2])) == 1  # the group that succeeded ran once
    assert ("high", [11, 12, 13]) in runs
    assert ("high", [11]) in runs
    assert ("high", [13]) in runs


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


def test_a_shared_statements_results_are_dealt_back_in_order() -> None:
    from mq.queue.shared import split

    assert split([1, 2, 3, 4, 5], [2, 1, 2]) == [[1, 2], [3], [4, 5]]
    assert split([1, 2], [2, 3]) == [[1, 2], []]  # a dequeue that found fewer rows than asked


async def test_a_caller_cancelled_before_its_flush_is_not_sent() -> None:
    recorder = Recorder()
    coalescer = Coalescer(recorder.flush, max_batch=100, max_in_flight=1)
    gone = asyncio.create_task(coalescer.submit(1))
    kept = asyncio.create_task(coalescer.submit(2))
    await asyncio.sleep(0)  # both queued; the flush starts on the loop's next turn
    gone.cancel()
    assert await kept == 20
    assert recorder.batches == [[2]]


async def test_a_caller_cancelled_while_its_item_is_written_hands_its_result_to_orphaned() -> None:
    recorder = Recorder(delay=0.05)
    coalescer = Coalescer(recorder.flush, max_batch=100, max_in_flight=1)
    handed: list[int] = []
    gone = asyncio.create_task(coalescer.submit(1, handed.append))
    kept = asyncio.create_task(coalescer.submit(2, handed.append))
    await asyncio.sleep(0.01)  # the flush is running
    gone.cancel()
    assert await kept == 20
    assert recorder.batches == [[1, 2]]
    assert handed == [10]  # the cancelled caller's result (a lease nobody will see) goes to be undone
