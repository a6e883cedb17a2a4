"""Skiplock on a Redis Cluster (`mq.redis_client`, docs/scale-out.md "Redis at that scale"): two instances whose
Redis is a 3-master cluster of Debian's redis-server share their token buckets, hear each other's cache
invalidations and wake each other's long polls, and every key of a tenant is in one slot."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from redis.asyncio.cluster import RedisCluster

from mq import redis_client
from tests.integration.helpers import b64, dequeue, long_polls_waiting
from tests.integration.test_topic_configs import put_config, shared_throughput, tenant_client
from tests.support.redis_cluster import redis_cluster
from tests.support.servers import Server, start_server, stop_server
from tests.support.tenants import Tenant


@pytest.fixture(scope="module")
def cluster_url() -> Iterator[str]:
    with redis_cluster() as url:
        if url is None:
            pytest.skip("no redis-server here (apt-get install redis-server)")
        yield url


@pytest.fixture(scope="module")
def on_cluster(server_env: dict[str, str], cluster_url: str) -> Iterator[tuple[Server, Server]]:
    """Two instances on the session's Postgres, their Redis the cluster."""
    env = {**server_env, "SKIPLOCK_REDIS_URL": cluster_url}
    first, second = start_server(env), start_server(env)
    try:
        yield first, second
    finally:
        stop_server(first)
        stop_server(second)


async def test_a_throughput_limit_is_shared_by_two_instances_on_a_cluster(
    on_cluster: tuple[Server, Server], cluster_url: str, tenant: Tenant
) -> None:
    rate = 40
    async with tenant_client(on_cluster[0].base_url, tenant) as a, tenant_client(on_cluster[1].base_url, tenant) as b:
        measured = await shared_throughput(a, b, rate, seconds=6)
    assert rate * 0.85 <= measured <= rate * 1.15, measured
    # the tenant's keys (its bucket, its cached configs): one slot, so one node of the cluster
    cluster = redis_client.connect(cluster_url)
    assert isinstance(cluster, RedisCluster)
    try:
        keys = await cluster.keys(f"skiplock:{{{tenant.id}}}:*", target_nodes=RedisCluster.ALL_NODES)
        assert len(keys) >= 2, keys
        assert len({cluster.keyslot(key) for key in keys}) == 1, keys
    finally:
        await cluster.aclose()


async def test_a_config_change_reaches_the_other_instance_through_the_cluster(
    on_cluster: tuple[Server, Server], tenant: Tenant
) -> None:
    """B has the topic's config cached (uncapped, for 5 s); A caps it: B refuses within a second."""
    async with tenant_client(on_cluster[0].base_url, tenant) as a, tenant_client(on_cluster[1].base_url, tenant) as b:
        body: dict[str, Any] = {"topic": "capped", "payload": b64("x")}
        assert (await b.post("/api/messages", json=body)).status_code == 201
        await put_config(a, "capped", max_depth=1)
        started = time.monotonic()
        while (r := await b.post("/api/messages", json=body)).status_code != 429:
            assert r.status_code == 201, r.text
            assert time.monotonic() - started < 1.0, "instance B still uses the config it had cached"
            await asyncio.sleep(0.02)
        assert r.json()["code"] == "queue_full"


async def test_a_long_poll_on_one_instance_wakes_for_an_enqueue_on_the_other(
    on_cluster: tuple[Server, Server], tenant: Tenant
) -> None:
    async with tenant_client(on_cluster[0].base_url, tenant) as a, tenant_client(on_cluster[1].base_url, tenant) as b:
        poll = asyncio.create_task(dequeue(b, "woken", count=1, wait_seconds=20))
        await long_polls_waiting(on_cluster[1].base_url)
        started = time.monotonic()
        assert (await a.post("/api/messages", json={"topic": "woken", "payload": b64("hi")})).status_code == 201
        [got] = await poll
        assert got["topic"] == "woken" and time.monotonic() - started < 2
