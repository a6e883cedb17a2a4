"""Roles, tenant statuses, actions, and grant matching (contract, "Auth and tenancy"): pure functions, no I/O.

A grant is (action, topic_pattern, consumer_group). Pattern `*` matches every topic; `orders.*` matches `orders`
and every topic starting with `orders.`; anything else matches exactly that topic. A grant on a topic also covers its
dead-letter topic (`orders` covers `orders.dlq`). Actions: produce = enqueue; consume = dequeue, ack, nack, extend,
requeue; read = browse messages and stats. A `consume` grant may name a consumer group: where every consume grant
covering a topic names one, its holder consumes the topic only as one of those groups.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from mq.names import DLQ_SUFFIX, is_topic

#: (action, topic_pattern, consumer_group): the group only on a `consume` grant that pins one.
GrantTuple = tuple[str, str, str | None]

Role = Literal["platform_admin", "tenant_admin", "member"]
#: Roles the user routes can give; platform admins come only from settings.
AssignableRole = Literal["tenant_admin", "member"]
TenantStatus = Literal["active", "suspended"]
Action = Literal["produce", "consume", "read"]
ACTIONS: tuple[Action, ...] = get_args(Action)
#: A topic name (200) and ".*".
MAX_PATTERN_LENGTH = 202


def valid_pattern(pattern: str) -> bool:
    """`*`, `<topic>.*` or a topic name."""
    if pattern == "*":
        return True
    base = pattern[:-2] if pattern.endswith(".*") else pattern
    return is_topic(base)


def covers(pattern: str, topic: str) -> bool:
    if pattern == "*":
        return True
    if topic.endswith(DLQ_SUFFIX) and covers(pattern, topic[: -len(DLQ_SUFFIX)]):
        return True
    if pattern.endswith(".*"):
        prefix = pattern[:-2]
        return topic == prefix or topic.startswith(prefix + ".")
    return topic == pattern


def allowed(grants: Iterable[GrantTuple], action: str, topic: str) -> bool:
    return any(a == action and covers(p, topic) for a, p, _ in grants)


def allows_every_topic(grants: Iterable[GrantTuple], action: str) -> bool:
    return any(a == action and p == "*" for a, p, _ in grants)


def consumer_groups(grants: Iterable[GrantTuple], topic: str) -> frozenset[str] | None:
    """The consumer groups the consume grants covering `topic` pin, or None when one of them pins none (the
    holder consumes the topic as it likes, with or without a group)."""
    pinned: set[str] = set()
    for action, pattern, group in grants:
        if action == "consume" and covers(pattern, topic):
            if group is None:
                return None
            pinned.add(group)
    return frozenset(pinned)
