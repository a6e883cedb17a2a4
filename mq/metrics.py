"""Prometheus metrics (docs/operations.md lists each one): counters the hot path bumps, histograms, and gauges read
from the `topic_gauges`, `consumer_group_gauges` and `job_runs` tables that the leader's jobs keep fresh.

Labels carry a tenant's slug, never another tenant's data, and their number is bounded: beyond
`max_topics_per_tenant` topic labels per tenant, further topics count under `topic="other"`. Each `Metrics` has a
registry of its own (several apps may live in one test process). A counter bump costs a dict lookup and an
addition; histograms bisect into their buckets, so a dequeue of 100 observes 100 waits in a few microseconds.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from mq.db.repository import GaugeRow, GroupGaugeRow, JobRun, OperationsRepository, TopicLimitRow
from mq.faults import is_dependency_fault

# No `<counter>_created` series beside each counter: they doubled a scrape's series and no query of ours reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]

OTHER = "other"
#: Label lookups remembered per process; past this many (a tenant inventing topics) they are forgotten and redone.
_MAX_REMEMBERED_LABELS = 100_000
#: Seconds a scrape reuses the gauges it read from Postgres.
_GAUGES_REUSE_SECONDS = 2.0
_HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0)
_LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)
#: Seconds a scrape waits for a dependency's answer before it counts it as down.
_PROBE_TIMEOUT_SECONDS = 1.0
_WAIT_BUCKETS = (0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0)


class _LeanRequests(Collector):
    """`skiplock_http_lean_requests_total` from the hot routes' counts, at scrape."""

    def __init__(self, counts: collections.Counter[str]) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "skiplock_http_lean_requests",
            "Requests the hot routes answered on their lean path (api.hot_routes), by route template",
            labels=["route"],
        )
        for route, n in sorted(self.counts.items()):
            family.add_metric([route], n)
        yield family


@dataclass
class PoolSizes:
    """How to read a connection pool's sizes at scrape (callables, so that this module imports no driver)."""

    size: Callable[[], int]
    idle: Callable[[], int]
    max_size: Callable[[], int]


class _Dependencies(Collector):
    """Postgres and Redis as the last scrape found them, this process's pool, and Postgres' connection slots."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self._metrics
        up = GaugeMetricFamily(
            "skiplock_dependency_up",
            "1 when the dependency answered this process's last probe (at a scrape, within 1 s), else 0",
            labels=["dependency"],
        )
        for name, value in sorted(m.dependency_up.items()):
            up.add_metric([name], value)
        yield up
        if m.pool is not None:
            size, idle = m.pool.size(), m.pool.idle()
            pool = GaugeMetricFamily(
                "skiplock_db_pool_connections",
                "This process's hot-path pool: connections running a statement (busy) or idle",
                labels=["state"],
            )
            pool.add_metric(["busy"], size - idle)
            pool.add_metric(["idle"], idle)
            yield pool
            yield GaugeMetricFamily(
                "skiplock_db_pool_max_connections", "The most connections the pool opens", value=m.pool.max_size()
            )
        if m.server_connections is not None:
            used, limit = m.server_connections
            yield GaugeMetricFamily(
                "skiplock_db_server_connections",
                "Client connections open on the Postgres server (every client, not only this one)",
                value=used,
            )
            yield GaugeMetricFamily(
                "skiplock_db_server_max_connections",
                "Connections Postgres accepts from ordinary roles (max_connections less the reserved ones)",
                value=limit,
            )


class _Waiting(Collector):
    """`skiplock_long_polls_waiting` by tenant and topic, read at scrape."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self._metrics
        family = GaugeMetricFamily(
            "skiplock_long_polls_waiting",
            "Dequeues (and gRPC Subscribe streams) waiting for a message in this process, by tenant and topic",
            labels=["tenant", "topic"],
        )
        totals: dict[tuple[str, str], int] = {}
        for (tenant_id, topic), n in m.waiting().items():
            tenant = m.tenant(tenant_id)
            labels = (tenant, m.topic(tenant, topic))
            totals[labels] = totals.get(labels, 0) + n
        for labels, n in sorted(totals.items()):
            family.add_metric(list(labels), n)
        yield family


class Histogram(Collector):
    """A labelled histogram with bulk observation (prometheus_client's takes a lock per value)."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str], buckets: Sequence[float]) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = list(labels)
        self.buckets = list(buckets)
        self._series: dict[tuple[str, ...], list[float]] = {}  # per label values: bucket counts, +Inf, sum

    def observe(self, labels: tuple[str, ...], values: Iterable[float]) -> None:
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = [0.0] * (len(self.buckets) + 2)
        buckets, sum_at = self.buckets, len(self.buckets) + 1
        for value in values:
            series[bisect.bisect_left(buckets, value)] += 1
            series[sum_at] += value

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labels)
        for labels, series in self._series.items():
            cumulative, running = [], 0.0
            for bound, count in zip([*self.buckets, math.inf], series, strict=False):
                running += count
                cumulative.append(("+Inf" if bound == math.inf else repr(bound), running))
            family.add_metric(list(labels), cumulative, series[-1])
        yield family


class _StoredGauges(Collector):
    """Gauges from the tables the leader refreshes, as of the last `Metrics.read_gauges`."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        messages = GaugeMetricFamily(
            "skiplock_messages",
            "Messages by tenant, topic and status (refreshed by the leader)",
            labels=["tenant", "topic", "status"],
        )
        oldest = GaugeMetricFamily(
            "skiplock_oldest_pending_age_seconds",
            "Age of the oldest available pending message per topic",
            labels=["tenant", "topic"],
        )
        depth: dict[tuple[str, str, str], float] = {}
        ages: dict[tuple[str, str], float] = {}
        ranks: dict[str, dict[str, int]] = {}  # rows come largest first: the biggest topics keep their names
        for tenant, topic, status, count, age in self._metrics.gauge_rows:
            topics = ranks.setdefault(tenant, {})
            rank = topics.setdefault(topic, len(topics))
            folded = topic if rank < self._metrics.max_topics - 1 else OTHER
            depth[(tenant, folded, status)] = depth.get((tenant, folded, status), 0) + count
            if age is not None:
                ages[(tenant, folded)] = max(ages.get((tenant, folded), 0.0), age)
        for labels, value in depth.items():
            messages.add_metric(list(labels), value)
        for (tenant, topic), age in ages.items():
            oldest.add_metric([tenant, topic], age)
        yield messages
        yield oldest
        yield self._limits(ranks)
        yield from self._groups(ranks)
        last = GaugeMetricFamily(
            "skiplock_job_last_run_timestamp_seconds", "When each job last finished (Unix time)", labels=["job"]
        )
        duration = GaugeMetricFamily("skiplock_job_last_duration_seconds", "How long its last run took", labels=["job"])
        rows = GaugeMetricFamily("skiplock_job_last_rows", "Rows its last run touched", labels=["job"])
        for job, finished, seconds, count in self._metrics.job_rows:
            last.add_metric([job], finished)
            duration.add_metric([job], seconds)
            rows.add_metric([job], count)
        yield last
        yield duration
        yield rows

    def _limits(self, ranks: dict[str, dict[str, int]]) -> Metric:
        """The limits topics set (`max_inflight`, `max_depth`, `throughput_limit`), for what they hold beside them.
        A topic folded into `other` has no limit of its own there."""
        family = GaugeMetricFamily(
            "skiplock_topic_limit",
            "A topic's configured limit: max_inflight (per consumer group), max_depth, throughput_limit (per second)",
            labels=["tenant", "topic", "limit"],
        )
        for tenant, topic, max_inflight, max_depth, throughput_limit in self._metrics.limit_rows:
            rank = ranks.get(tenant, {}).get(topic)
            if rank is not None and rank >= self._metrics.max_topics - 1:
                continue
            for name, value in (
                ("max_inflight", max_inflight),
                ("max_depth", max_depth),
                ("throughput_limit", throughput_limit),
            ):
                if value:
                    family.add_metric([tenant, topic, name], value)
        return family

    def _groups(self, ranks: dict[str, dict[str, int]]) -> Iterator[Metric]:
        """Each consumer group's deliveries and oldest pending age. Topics fold into `other` as above; a tenant's
        groups past `max_topics` (by pending deliveries) fold into `consumer_group="other"`."""
        deliveries = GaugeMetricFamily(
            "skiplock_group_messages",
            "Deliveries a consumer group still owes, by status (refreshed by the leader)",
            labels=["tenant", "topic", "consumer_group", "status"],
        )
        oldest = GaugeMetricFamily(
            "skiplock_group_oldest_pending_age_seconds",
            "Age of a consumer group's oldest available delivery: its lag",
            labels=["tenant", "topic", "consumer_group"],
        )
        counts: dict[tuple[str, str, str, str], float] = {}
        ages: dict[tuple[str, str, str], float] = {}
        seen: dict[str, int] = {}
        for tenant, topic, group, pending, processing, age in self._metrics.group_rows:
            rank = ranks.get(tenant, {}).get(topic, 0)
            folded = topic if rank < self._metrics.max_topics - 1 else OTHER
            n = seen[tenant] = seen.get(tenant, 0) + 1
            name = group if n < self._metrics.max_topics else OTHER
            for status, count in (("pending", pending), ("processing", processing)):
                key = (tenant, folded, name, status)
                counts[key] = counts.get(key, 0.0) + count
            if age is not None:
                ages[(tenant, folded, name)] = max(ages.get((tenant, folded, name), 0.0), age)
        for labels, total in counts.items():
            deliveries.add_metric(list(labels), total)
        for lag_labels, age in ages.items():
            oldest.add_metric(list(lag_labels), age)
        yield deliveries
        yield oldest


class Metrics:
    def __init__(self, max_topics_per_tenant: int = 50) -> None:
        self.registry = CollectorRegistry()
        self.max_topics = max_topics_per_tenant
        #: Tenant id -> slug, filled as callers authenticate (labels show slugs).
        self.tenant_names: dict[int, str] = {}
        self._topics: dict[str, set[str]] = {}
        self._children: dict[tuple[Any, ...], Any] = {}
        self.gauge_rows: list[GaugeRow] = []
        self.group_rows: list[GroupGaugeRow] = []
        self.job_rows: list[JobRun] = []
        self.limit_rows: list[TopicLimitRow] = []
        self._gauges_read_at = -math.inf
        #: 1 or 0 per dependency, as the last scrape's probes found them.
        self.dependency_up: dict[str, int] = {}
        #: Postgres' client connections and the most it accepts, as the last scrape read them.
        self.server_connections: tuple[int, int] | None = None
        self.pool: PoolSizes | None = None
        self.waiting: Callable[[], dict[tuple[int, str], int]] = dict

        def counter(name: str, documentation: str, *extra: str) -> Counter:
            return Counter(name, documentation, ["tenant", "topic", *extra], registry=self.registry)

        self.enqueued = counter("skiplock_messages_enqueued", "Messages stored by enqueues (new rows)")
        self.upserted = counter("skiplock_messages_upserted", "Keyed enqueues that replaced a pending twin")
        self.dequeued = counter("skiplock_messages_dequeued", "Messages delivered by dequeues")
        self.acked = counter("skiplock_messages_acked", "Messages acknowledged (deleted)")
        self.nacked = counter("skiplock_messages_nacked", "Nacks by outcome: retry, dlq or failed", "outcome")
        self.lease_expired = counter(
            "skiplock_leases_expired",
            "Lapsed leases (a consumer neither acked nor nacked in time), counted as failed attempts when the message "
            "is next taken: redelivered, or moved to the dlq or failed once max_retries is used up",
            "outcome",
        )
        self.requeued = counter("skiplock_messages_requeued", "Dead letters moved back to their topic")
        self.expired = counter("skiplock_messages_expired", "Messages the expiry reaper expired or moved to a DLQ")
        self.deleted = counter("skiplock_messages_deleted", "Messages the delete reaper deleted")
        self.rejected = counter(
            "skiplock_enqueue_rejected",
            "Enqueued messages refused: queue_full, rate_limited, quota or payload_too_large",
            "reason",
        )
        self.throttled = counter("skiplock_dequeues_throttled", "Dequeues cut short by the topic's throughput_limit")
        self.logged = counter("skiplock_history_written", "Acked messages kept in a replayable topic's message log")
        self.replayed = counter("skiplock_history_replayed", "Logged messages enqueued again by replays")
        self.partitions_dropped = Counter(
            "skiplock_history_partitions_dropped",
            "Message log partitions dropped by the archive reaper run in this process",
            registry=self.registry,
        )
        self.grpc_calls = Counter(
            "skiplock_grpc_calls",
            "Calls of queue-ti's gRPC service by method and status code (a Subscribe stream counts when it ends)",
            ["method", "code"],
            registry=self.registry,
        )
        self.schedule_ticks = counter("skiplock_schedule_ticks", "Schedule ticks whose message was enqueued")
        self.schedule_refused = counter(
            "skiplock_schedule_ticks_refused",
            "Schedule ticks refused (schema_violation, queue_full, quota_exceeded, rate_limited, payload_too_large, "
            "tenant_suspended, invalid): recorded in the schedule's last_error, not retried",
            "reason",
        )
        self.schedule_skipped = counter(
            "skiplock_schedule_ticks_skipped",
            "Missed schedule ticks not enqueued: when ticks were missed (no worker ran), only the latest is",
        )
        self.schedule_lag = Histogram(
            "skiplock_schedule_lag_seconds", "Schedule ticks: when fired, less when due", [], _LAG_BUCKETS
        )
        self.http = Histogram(
            "skiplock_http_request_duration_seconds",
            "HTTP requests by route template, method and status class",
            ["route", "method", "status"],
            _HTTP_BUCKETS,
        )
        #: Requests the hot routes answered on their lean path, by route template (`api.hot_routes` adds to it: a
        #: dict's increment, where a labelled counter's took 0.6 µs on the hottest path)
        self.lean: collections.Counter[str] = collections.Counter()
        self.wait = Histogram(
            "skiplock_message_wait_seconds",
            "Time from enqueue to first delivery",
            ["tenant", "topic"],
            _WAIT_BUCKETS,
        )
        self.refusals = Counter(
            "skiplock_http_refusals",
            "Requests answered 4xx, by tenant (empty before the caller is known) and the contract's code",
            ["tenant", "code"],
            registry=self.registry,
        )
        self.grpc_duration = Histogram(
            "skiplock_grpc_call_duration_seconds",
            "Unary gRPC calls by method (a Subscribe stream is counted in skiplock_grpc_calls_total only)",
            ["method"],
            _HTTP_BUCKETS,
        )
        self.statements = Histogram(
            "skiplock_db_statement_duration_seconds",
            "The data plane's writes by kind (enqueue, dequeue, ack): a coalesced flush of many requests is one",
            ["statement"],
            _HTTP_BUCKETS,
        )
        self.replays = counter(
            "skiplock_replays",
            "Replays that ended, by outcome: done, refused midway (resumable), or failed (a dependency)",
            "outcome",
        )
        self.replays_running = Gauge(
            "skiplock_replays_running", "Replays running in this process", registry=self.registry
        )
        self.bulk_messages = counter(
            "skiplock_bulk_job_messages",
            "Messages bulk jobs (a DLQ redrive among them) went through, by action and outcome: done or skipped",
            "action",
            "outcome",
        )
        self.bulk_jobs_running = Gauge(
            "skiplock_bulk_jobs_running", "Bulk jobs running in this process", registry=self.registry
        )
        for collector in (
            self.http,
            self.wait,
            self.schedule_lag,
            self.grpc_duration,
            self.statements,
            _StoredGauges(self),
            _LeanRequests(self.lean),
            _Dependencies(self),
            _Waiting(self),
        ):
            self.registry.register(collector)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)

    def count_long_polls(self, waiting: Callable[[], dict[tuple[int, str], int]]) -> None:
        """Read the waiting long polls per (tenant id, topic) from `waiting` at each scrape."""
        self.waiting = waiting

    def watch_pool(self, pool: PoolSizes) -> None:
        self.pool = pool

    # --- labels ---------------------------------------------------------------------------------------------------

    def tenant(self, tenant_id: int) -> str:
        return self.tenant_names.get(tenant_id) or str(tenant_id)

    def topic(self, tenant: str, topic: str) -> str:
        """`topic`, or "other" once the tenant has `max_topics` topic labels."""
        seen = self._topics.setdefault(tenant, set())
        if topic in seen:
            return topic
        if len(seen) >= self.max_topics - 1:  # the last label is "other"
            return OTHER
        seen.add(topic)
        return topic

    # --- counting -------------------------------------------------------------------------------------------------

    def count(self, counter: Counter, tenant_id: int, topic: str, n: float = 1, *extra: str) -> None:
        key = (counter, tenant_id, topic, *extra)
        child = self._children.get(key)
        if child is None:
            if len(self._children) >= _MAX_REMEMBERED_LABELS:
                self._children.clear()
            tenant = self.tenant(tenant_id)
            child = self._children[key] = counter.labels(tenant, self.topic(tenant, topic), *extra)
        child.inc(n)

    def count_by_topic(self, counter: Counter, by_topic: dict[tuple[str, str], int] | None) -> None:
        """Counts from a job, per (tenant slug, topic)."""
        for (tenant, topic), n in (by_topic or {}).items():
            counter.labels(tenant, self.topic(tenant, topic)).inc(n)

    def waited(self, tenant_id: int, topic: str, seconds: Iterable[float]) -> None:
        tenant = self.tenant(tenant_id)
        self.wait.observe((tenant, self.topic(tenant, topic)), seconds)

    # --- exposition -----------------------------------------------------------------------------------------------

    async def read_gauges(
        self, repository: OperationsRepository, redis_ping: Callable[[], Awaitable[Any]] | None = None
    ) -> None:
        """Probe Postgres (its connection count) and Redis, and read the stored gauges, at most every two seconds
        (a scrape of every instance costs a few small reads). A dependency that does not answer within a second
        is down; the gauges then keep what was read last (`SkiplockGaugesStale` tells)."""
        now = time.monotonic()
        if now - self._gauges_read_at < _GAUGES_REUSE_SECONDS:
            return
        self._gauges_read_at = now
        if redis_ping is not None:
            self.dependency_up["redis"] = int(await _answers(redis_ping) is not None)
        connections = await _answers(repository.connections)
        self.dependency_up["postgres"] = int(connections is not None)
        if connections is None:
            return
        self.server_connections = connections
        self.gauge_rows = list(await repository.gauges())
        self.group_rows = list(await repository.group_gauges())
        self.job_rows = list(await repository.job_runs())
        self.limit_rows = list(await repository.topic_limits())

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


async def _answers(probe: Callable[[], Awaitable[Any]]) -> Any:
    """What `probe` returns (True for a None answer), or None when it fails or takes longer than a second."""
    try:
        async with asyncio.timeout(_PROBE_TIMEOUT_SECONDS):
            answer = await probe()
    except TimeoutError:
        return None
    except Exception as exc:
        if not is_dependency_fault(exc):
            raise
        return None
    return True if answer is None else answer
