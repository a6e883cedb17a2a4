"""Reading a topic's messages (a DLQ, say) through the browse API: paged, newest first, without leasing or changing
them. `status` and `key` filters (options, or with `pushFilters=true` the `where` clauses Spark pushes down) become
query parameters; `consumerGroup` reads one consumer group's view: the messages it still owes and, in the DLQ, its
dead letters. The pages
are split among partitions when the reader is planned; a topic that changes meanwhile may show a message twice or
not at all at a page boundary (the browse API pages by offset)."""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql.datasource import DataSourceReader, EqualTo, Filter, InputPartition

from skiplock_client.client import AsyncClient
from skiplock_client.models import Message, Page
from skiplock_client.spark.options import ReadOptions

SCHEMA = (
    "id string, topic string, key string, payload binary, metadata string, status string, priority int, "
    "retry_count int, max_retries int, last_error string, created_at timestamp, updated_at timestamp, "
    "available_at timestamp, expires_at timestamp, original_topic string, dlq_moved_at timestamp, consumer_group string"
)
_PAGES_PER_PARTITION = 10


@dataclass(frozen=True)
class _Pages(InputPartition):
    offset: int
    end: int


def _time(value: str | None) -> datetime.datetime | None:
    return datetime.datetime.fromisoformat(value) if value else None


def _row(m: Message) -> tuple[Any, ...]:
    return (
        m.id,
        m.topic,
        m.key,
        m.payload,
        json.dumps(m.metadata) if m.metadata is not None else None,
        m.status,
        m.priority,
        m.retry_count,
        m.max_retries,
        m.last_error,
        _time(m.created_at),
        _time(m.updated_at),
        _time(m.available_at),
        _time(m.expires_at),
        m.original_topic,
        _time(m.dlq_moved_at),
        m.consumer_group,
    )


class SkiplockReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        total = asyncio.run(self._total())
        span = self.options.page_size * _PAGES_PER_PARTITION
        return [_Pages(start, min(start + span, total)) for start in range(0, total, span)] or [_Pages(0, 0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, _Pages)
        yield from asyncio.run(self._read(partition))

    async def _total(self) -> int:
        async with self._client() as client:
            return (await self._page(client, 0, 1)).total

    async def _read(self, pages: _Pages) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        async with self._client() as client:
            for offset in range(pages.offset, pages.end, self.options.page_size):
                page = await self._page(client, offset, min(self.options.page_size, pages.end - offset))
                rows.extend(_row(m) for m in page.items)
        return rows

    async def _page(self, client: AsyncClient, offset: int, limit: int) -> Page[Message]:
        o = self.options
        return await client.messages(
            o.topic, status=o.status, key=o.key, consumer_group=o.consumer_group, limit=limit, offset=offset
        )

    def _client(self) -> AsyncClient:
        c = self.options.connection
        return AsyncClient(c.url, auth=c.auth, tenant=c.tenant, verify=c.verify, timeout=c.timeout)


class FilteringReader(SkiplockReader):
    """The reader with Spark's filter pushdown (PySpark 4.1+, `spark.sql.python.filterPushdown.enabled`; chosen with
    the option `pushFilters=true`, since Spark refuses a reader that can push filters while that setting is off)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:  # noqa: N802 - Spark's name
        """`status = '...'` and `key = '...'` go to the server; everything else stays with Spark."""
        for condition in filters:
            if isinstance(condition, EqualTo) and condition.attribute in (("status",), ("key",)):
                name, value = condition.attribute[0], str(condition.value)
                if getattr(self.options, name) in (None, value):
                    if name == "status":
                        self.options = replace(self.options, status=value)  # type: ignore[arg-type] # the server checks it
                    else:
                        self.options = replace(self.options, key=value)
                    continue
            yield condition
