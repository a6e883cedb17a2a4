"""Token buckets: the per-instance fallback's arithmetic (the Redis script is tested against a real Redis in
tests/integration/test_buckets.py)."""

from __future__ import annotations

from mq.buckets import TokenBuckets


async def test_without_redis_a_bucket_holds_one_second_of_rate_per_instance() -> None:
    buckets = TokenBuckets(None, instances=2)
    granted, wait = await buckets.take("k", rate=10, want=100, whole=False)
    assert granted == 5 and wait == 0  # 10/s over 2 instances: 5 tokens here
    granted, wait = await buckets.take("k", rate=10, want=1, whole=False)
    assert granted == 0 and 0 < wait <= 0.2


async def test_a_whole_request_gets_all_or_nothing_and_may_go_into_debt_when_full() -> None:
    buckets = TokenBuckets(None)
    assert await buckets.take("k", rate=4, want=3, whole=True) == (3, 0.0)
    granted, wait = await buckets.take("k", rate=4, want=2, whole=True)
    assert granted == 0 and 0.2 < wait <= 0.25
    fresh = TokenBuckets(None)
    assert (await fresh.take("k", rate=4, want=10, whole=True))[0] == 10  # larger than the bucket: allowed when full
    assert (await fresh.take("k", rate=4, want=1, whole=True))[0] == 0  # ...and repaid before anything else


async def test_tokens_given_back_are_available_again() -> None:
    buckets = TokenBuckets(None)
    assert (await buckets.take("k", rate=5, want=5, whole=False))[0] == 5
    await buckets.give_back("k", rate=5, tokens=3)
    assert (await buckets.take("k", rate=5, want=5, whole=False))[0] == 3
