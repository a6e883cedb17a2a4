"""Exact caps on what an enqueue may add: a tenant's `max_messages` and `max_topics`, a topic's `max_depth`.

The counting happens in Postgres, in the statement that inserts the rows (the database function `functions.ADMIT`,
`mq/queue/sql/functions.py`; docs/semantics.md "Quotas and max_depth"). This module builds that function's arguments
from the caps in force; `MessageRepository` turns its refusals into domain errors. A refusal is never answered from
memory: it is true when it is answered (each one recounts the scope, index-only, then without expired messages).
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

#: Seconds a refused producer is told to wait (Retry-After).
RETRY_AFTER_SECONDS = 1

TENANT_SCOPE = ""  # the gate of the whole tenant (max_messages)

#: `skiplock_admit`'s arguments after the tenant id (see `Caps.arguments`)
AdmitArguments = tuple[list[str], list[int], list[int], int | None, list[str]]


class Caps(NamedTuple):
    """The caps an enqueue must pass. Empty (`NO_CAPS`) for uncapped tenants and topics: they pay nothing."""

    max_messages: int | None = None
    max_topics: int | None = None
    #: (topic, max_depth) for the capped topics among those written
    depths: tuple[tuple[str, int], ...] = ()

    def __bool__(self) -> bool:
        return self.max_messages is not None or self.max_topics is not None or bool(self.depths)

    def merge(self, other: Caps) -> Caps:
        """The caps of two requests of one tenant sharing a statement: the tighter of each."""
        return Caps(
            _tighter(self.max_messages, other.max_messages),
            _tighter(self.max_topics, other.max_topics),
            tuple(sorted({**dict(other.depths), **dict(self.depths)}.items())),
        )

    def gates(self, rows_per_topic: Counter[str]) -> list[tuple[str, int, int]]:
        """(scope, rows, cap) of each gate that rows written to these topics pass, in lock order: the tenant's
        ('') first, then topics sorted."""
        depth = dict(self.depths)
        gates = (
            [(TENANT_SCOPE, sum(rows_per_topic.values()), self.max_messages)] if self.max_messages is not None else []
        )
        gates.extend((topic, rows_per_topic[topic], depth[topic]) for topic in sorted(rows_per_topic) if topic in depth)
        return gates

    def arguments(self, rows_per_topic: Counter[str]) -> AdmitArguments:
        """`skiplock_admit`'s arguments after the tenant: scopes, rows and cap per scope (see `gates`),
        max_topics, and the statement's topics."""
        gates = self.gates(rows_per_topic)
        topics = sorted(rows_per_topic) if self.max_topics is not None else []
        return [g[0] for g in gates], [g[1] for g in gates], [g[2] for g in gates], self.max_topics, topics


NO_CAPS = Caps()


def _tighter(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)
