"""Metric labels stay bounded however many topics a tenant uses."""

import asyncio

from prometheus_client.parser import text_string_to_metric_families

from mq.db.repository import GaugeRow
from mq.metrics import Metrics


def test_topics_beyond_the_limit_fold_into_other_and_tenants_show_slugs() -> None:
    metrics = Metrics(max_topics_per_tenant=3)
    metrics.tenant_names[1] = "acme"
    for n in range(10):
        metrics.count(metrics.enqueued, 1, f"t{n}", 2)
    metrics.count(metrics.enqueued, 2, "t0")  # a tenant not seen by auth yet: its id
    samples = {
        (s.labels["tenant"], s.labels["topic"]): s.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for s in family.samples
        if s.name == "skiplock_messages_enqueued_total"
    }
    assert samples == {("acme", "t0"): 2, ("acme", "t1"): 2, ("acme", "other"): 16, ("2", "t0"): 1}


def test_waits_are_observed_in_buckets() -> None:
    metrics = Metrics()
    metrics.waited(1, "orders", [0.001, 0.2, 7200.0])
    text = metrics.exposition().decode()
    assert 'skiplock_message_wait_seconds_bucket{le="0.005",tenant="1",topic="orders"} 1.0' in text
    assert 'skiplock_message_wait_seconds_bucket{le="+Inf",tenant="1",topic="orders"} 3.0' in text
    assert 'skiplock_message_wait_seconds_count{tenant="1",topic="orders"} 3.0' in text


class _Unreachable:
    """A repository whose Postgres does not answer (what asyncpg raises when the server is gone)."""

    async def connections(self) -> tuple[int, int]:
        raise ConnectionRefusedError("connection refused")


async def test_a_dependency_that_does_not_answer_is_down_and_the_gauges_keep_their_last_values() -> None:
    metrics = Metrics()
    metrics.gauge_rows = [GaugeRow("acme", "orders", "pending", 5, 1.0)]

    async def redis_ping() -> None:
        await asyncio.sleep(5)  # longer than a scrape waits

    await metrics.read_gauges(_Unreachable(), redis_ping)  # type: ignore[arg-type]
    text = metrics.exposition().decode()
    assert 'skiplock_dependency_up{dependency="postgres"} 0.0' in text
    assert 'skiplock_dependency_up{dependency="redis"} 0.0' in text
    assert 'skiplock_messages{status="pending",tenant="acme",topic="orders"} 5.0' in text
