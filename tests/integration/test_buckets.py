"""Token buckets on a real Redis: one bucket shared by two clients (two instances), and the fallback when Redis
cannot be reached."""

from __future__ import annotations

import asyncio
import uuid

import redis.asyncio as aioredis

from mq.buckets import TokenBuckets


async def test_two_instances_share_one_bucket(any_redis_url: str) -> None:
    a, b = aioredis.from_url(any_redis_url), aioredis.from_url(any_redis_url)
    try:
        first, second = TokenBuckets(a, instances=2), TokenBuckets(b, instances=2)
        key = f"skiplock:bucket:test:{uuid.uuid4().hex}"
        granted = [(await (first, second)[n % 2].take(key, rate=10, want=3, whole=False))[0] for n in range(6)]
        assert sum(granted) == 10 or sum(granted) == 11  # one bucket of 10 (plus what refilled meanwhile)
        await first.give_back(key, rate=10, tokens=4)
        assert (await second.take(key, rate=10, want=4, whole=True))[0] == 4
        granted_now, wait = await second.take(key, rate=10, want=5, whole=True)
        assert granted_now == 0 and 0 < wait <= 0.5
        assert 0 < await a.pttl(key) <= 2100  # idle buckets expire by themselves
    finally:
        await a.aclose()
        await b.aclose()


async def test_unreachable_redis_falls_back_to_a_local_bucket_per_instance(caplog) -> None:  # type: ignore[no-untyped-def]
    unreachable = aioredis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.5)
    try:
        buckets = TokenBuckets(unreachable, instances=4)
        granted = [(await buckets.take("k", rate=40, want=1, whole=False))[0] for _ in range(15)]
        assert sum(granted) == 10  # 40/s over 4 instances
        await asyncio.sleep(0)
        assert sum("Redis unreachable" in r.getMessage() for r in caplog.records) == 1  # logged once
    finally:
        await unreachable.aclose()
