"""The message log's partitions: made ahead of time, dropped once nothing in them is visible any more.

Each partition holds `interval` seconds of `acked_at` and is named for its bounds in Unix seconds,
`message_log_p<from>_<to>`, so that a change of the interval setting never confuses the old ones. The archive reaper
(`mq.jobs.ArchiveReaper`) makes the current one and `AHEAD` more on every run, and drops a partition whose whole
span lies below the visible floor of every topic with entries in it (`mq.history.sql`): a trim or a
`replay_window_seconds` hides entries at once; their storage goes with their partition, as one DROP TABLE, never
a row-by-row DELETE. A topic kept until trimmed (no window) keeps its partitions until it is trimmed past them.
The default partition catches rows only when no partition was made in time (the workers stopped for
`AHEAD` intervals): they are readable as any, and deleted by the reaper once below every floor.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from mq.db.models import LOG_PARTITION_PREFIX
from mq.history import sql

log = logging.getLogger(__name__)

#: Partitions made ahead of the current one.
AHEAD = 2
DEFAULT_PARTITION = f"{LOG_PARTITION_PREFIX}_default"
_NAME = re.compile(rf"^{LOG_PARTITION_PREFIX}(\d+)_(\d+)$")


class Connection(Protocol):
    async def fetch(self, query: str, *args: Any) -> list[Any]: ...
    async def fetchval(self, query: str, *args: Any) -> Any: ...
    async def execute(self, query: str, *args: Any) -> str: ...


@dataclass(frozen=True)
class Span:
    name: str
    start: int  # Unix seconds, inclusive
    end: int  # exclusive


def span_of(name: str) -> Span | None:
    found = _NAME.match(name)
    return Span(name, int(found.group(1)), int(found.group(2))) if found else None


class LogPartitions:
    def __init__(self, interval_seconds: int) -> None:
        self.interval = interval_seconds

    async def spans(self, conn: Connection) -> list[Span]:
        found = [span_of(r["name"]) for r in await conn.fetch(sql.PARTITIONS)]
        return sorted((s for s in found if s is not None), key=lambda s: s.start)

    async def ensure(self, conn: Connection, now: float | None = None) -> int:
        """Make the current partition and `AHEAD` more where none covers them; how many were made."""
        now = time.time() if now is None else now
        have = await self.spans(conn)
        first = int(now) // self.interval * self.interval
        made = 0
        for k in range(AHEAD + 1):
            start, end = first + k * self.interval, first + (k + 1) * self.interval
            if any(s.start < end and start < s.end for s in have):  # covered (perhaps by an older interval)
                continue
            name = f"{LOG_PARTITION_PREFIX}{start}_{end}"
            try:
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF message_log "
                    f"FOR VALUES FROM ('{_at(start)}') TO ('{_at(end)}')"
                )
                made += 1
            except Exception as exc:  # rows of that span already in the default partition: they stay there
                log.warning("message log: could not make partition %s: %s", name, exc)
        return made

    async def drop_expired(self, conn: Connection, now: float | None = None) -> tuple[int, int]:
        """Drop every partition wholly below the visible floor of each topic in it: (rows, partitions) dropped."""
        now = time.time() if now is None else now
        dropped = partitions = 0
        topics = sql.PARTITION_TOPICS_CITUS if await conn.fetchval(sql.ON_CITUS) else sql.PARTITION_TOPICS
        for span in await self.spans(conn):
            if span.end > now:
                break
            floors = await conn.fetch(topics.format(partition=span.name))
            if any(f["floor"] is None or f["floor"].timestamp() < span.end for f in floors):
                continue
            rows = int(await conn.fetchval(f"SELECT count(*) FROM {span.name}"))
            await conn.execute(f"DROP TABLE {span.name}")
            log.info("message log: dropped partition %s (%d rows)", span.name, rows)
            dropped += rows
            partitions += 1
        dropped += _affected(await conn.execute(sql.DEFAULT_TRIM))
        return dropped, partitions


def _at(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def _affected(status: str) -> int:
    return int(status.rsplit(" ", 1)[-1]) if status and status[-1].isdigit() else 0
