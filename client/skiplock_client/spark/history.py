"""Reading a replayable topic's message log as a DataFrame: `option("history", "true")`.

The log is read oldest first by `acked_at` through its keyset pages (`AsyncClient.message_log`). With both ends of
the time range known (the options `since` and `until`, or, with `pushFilters=true`, `where acked_at >= ... and
acked_at < ...` pushed down by Spark), the range is cut into `slices` equal spans read by as many tasks; otherwise
one task reads it all. A bound Spark pushes that the log cannot apply exactly (`>`, `<=`) narrows the read and stays
with Spark as well.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)

from skiplock_client.client import AsyncClient
from skiplock_client.models import LogEntry
from skiplock_client.spark.options import OptionError, ReadOptions

HISTORY_SCHEMA = (
    "id string, topic string, key string, payload binary, metadata string, priority int, retry_count int, "
    "created_at timestamp, acked_at timestamp"
)
_UTC = datetime.UTC


@dataclass(frozen=True)
class _Span(InputPartition):
    since: str | None
    until: str | None


def _time(value: str) -> datetime.datetime:
    at = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return at if at.tzinfo else at.replace(tzinfo=_UTC)


def _iso(at: datetime.datetime) -> str:
    return (at if at.tzinfo else at.replace(tzinfo=_UTC)).astimezone(_UTC).isoformat()


def _row(e: LogEntry) -> tuple[Any, ...]:
    return (
        e.id,
        e.topic,
        e.key,
        e.payload,
        json.dumps(e.metadata) if e.metadata is not None else None,
        e.priority,
        e.retry_count,
        _time(e.created_at),
        _time(e.acked_at),
    )


class HistoryReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        if not options.topic:
            raise OptionError("option 'topic' is required to read a message log (history=true)")
        self.options = options

    def partitions(self) -> list[InputPartition]:
        o = self.options
        if o.since is None or o.until is None or o.slices <= 1:
            return [_Span(o.since, o.until)]
        start, end = _time(o.since), _time(o.until)
        step = (end - start) / o.slices
        bounds = [start + step * n for n in range(o.slices)] + [end]
        return [_Span(_iso(a), _iso(b)) for a, b in itertools.pairwise(bounds) if a < b]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, _Span)
        yield from asyncio.run(self._read(partition))

    async def _read(self, span: _Span) -> list[tuple[Any, ...]]:
        o, c = self.options, self.options.connection
        async with AsyncClient(c.url, auth=c.auth, tenant=c.tenant, verify=c.verify, timeout=c.timeout) as client:
            assert o.topic is not None
            entries = client.message_log(o.topic, since=span.since, until=span.until, key=o.key, page_size=1000)
            return [_row(e) async for e in entries]


class FilteringHistoryReader(HistoryReader):
    """With Spark's filter pushdown: bounds on `acked_at` and `key = '...'` go to the server."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:  # noqa: N802 - Spark's name
        for condition in filters:
            if isinstance(
                condition, GreaterThanOrEqual | GreaterThan | LessThan | LessThanOrEqual
            ) and condition.attribute == ("acked_at",):
                at = condition.value if isinstance(condition.value, datetime.datetime) else _time(str(condition.value))
                if isinstance(condition, GreaterThanOrEqual | GreaterThan):
                    if self.options.since is None or _time(self.options.since) < at:
                        self.options = replace(self.options, since=_iso(at))
                    if isinstance(condition, GreaterThanOrEqual):
                        continue
                else:
                    bound = at if isinstance(condition, LessThan) else at + datetime.timedelta(microseconds=1)
                    if self.options.until is None or bound < _time(self.options.until):
                        self.options = replace(self.options, until=_iso(bound))
                    if isinstance(condition, LessThan):
                        continue
            elif isinstance(condition, EqualTo) and condition.attribute == ("key",) and self.options.key is None:
                self.options = replace(self.options, key=str(condition.value))
                continue
            yield condition
