"""Input rules of the queue's commands, whichever edge a request came through (REST, the hot routes, gRPC): sizes
from settings, reserved topics, text Postgres cannot store, a dequeue's bounds, group names."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import msgspec

from mq import errors
from mq.names import ADDRESSABLE_TOPIC_RE, DLQ_SUFFIX, GROUP_PATTERN, GROUP_RE, TOPIC_RE, check_text
from mq.queue.types import MAX_KEY_LENGTH, MAX_METADATA_DEPTH, MAX_VISIBILITY_SECONDS, EnqueueItem, NewRow
from mq.settings import Settings


def check_depth(value: Any, field: str) -> None:
    """JSON nested deeper than `MAX_METADATA_DEPTH` is refused: Postgres parses jsonb recursively and fails on a
    deep enough document with a server error, and nothing needs such nesting."""
    level = [value]
    for _ in range(MAX_METADATA_DEPTH):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
        if not level:
            return
    raise errors.InvalidRequest(f"{field} is nested deeper than {MAX_METADATA_DEPTH} levels")


@functools.lru_cache(maxsize=4096)  # a batch names the same topic on every item; invalid names raise, uncached
def check_topic(topic: str, *, for_enqueue: bool) -> None:
    """A name a message can be enqueued into (`for_enqueue`), or any name a route may address: a topic or its
    dead-letter topic."""
    # fullmatch: `$` also matches before a trailing newline
    if not (TOPIC_RE if for_enqueue else ADDRESSABLE_TOPIC_RE).fullmatch(topic):
        raise errors.InvalidRequest(
            "topic must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
            + ("" if for_enqueue else ", or be such a topic's dead-letter topic (<topic>.dlq)")
        )
    if for_enqueue and topic.endswith(DLQ_SUFFIX):
        raise errors.ReservedTopic(f"{topic!r} is a dead-letter topic; enqueue into {topic[:-4]!r} instead")


def build_item(
    settings: Settings,
    topic: str,
    payload: bytes,
    metadata: dict[str, Any] | None = None,
    key: str | None = None,
    delay_seconds: float = 0,
    priority: int = 0,
) -> EnqueueItem:
    """A validated message; raises InvalidRequest, ReservedTopic or PayloadTooLarge."""
    check_topic(topic, for_enqueue=True)
    if len(payload) > settings.max_payload_bytes:
        raise errors.PayloadTooLarge(f"payload is {len(payload)} bytes; the limit is {settings.max_payload_bytes}")
    metadata_json = None if metadata is None else encode_metadata(settings, metadata)
    if key is not None:
        if not key or len(key) > MAX_KEY_LENGTH:
            raise errors.InvalidRequest(f"key must be 1 to {MAX_KEY_LENGTH} characters")
        check_text(key, "key")
    return EnqueueItem(
        topic=topic,
        payload=payload,
        metadata_json=metadata_json,
        key=key,
        delay_seconds=delay_seconds,
        priority=priority,
    )


def encode_metadata(settings: Settings, metadata: dict[str, Any]) -> str:
    """A message's metadata (or a nack's, to merge) as JSON text, within the limits; raises InvalidRequest."""
    check_depth(metadata, "metadata")
    try:
        encoded = msgspec.json.encode(metadata)
    except (msgspec.EncodeError, UnicodeEncodeError):
        raise errors.InvalidRequest("metadata is not valid Unicode JSON") from None
    if len(encoded) > settings.max_metadata_bytes:
        raise errors.InvalidRequest(
            f"metadata is {len(encoded)} bytes as JSON; the limit is {settings.max_metadata_bytes}"
        )
    metadata_json = encoded.decode()
    check_text(metadata_json, "metadata")
    if "\\u0000" in metadata_json:
        raise errors.InvalidRequest("metadata must not contain NUL characters")
    return metadata_json


class BatchEntry(Protocol):
    """One decoded item of a batch enqueue body."""

    payload: bytes
    topic: str | None
    metadata: dict[str, Any] | None
    key: str | None
    delay_seconds: float
    priority: int


#: A topic's (max_retries, message_ttl_seconds) in force and whether it has consumer groups: what a row carries.
Limits = Callable[[str], Awaitable[tuple[int, int, bool]]]


async def build_rows(
    settings: Settings, default_topic: str | None, entries: Sequence[BatchEntry], limits: Limits
) -> tuple[list[NewRow], list[tuple[int, errors.InvalidRequest | errors.PayloadTooLarge]]]:
    """Validate a batch's items into the rows to insert (`limits` gives each topic's settings, asked once per
    topic): the rows of the valid items, and (index, error) for every bad one.

    Same rules as `build_item`. Items without key or metadata whose topic was already checked take a short path:
    a batch of a thousand plain messages costs little more than building its rows (one `build_item` per item costs
    about 1 µs).
    """
    rows: list[NewRow] = []
    problems: list[tuple[int, errors.InvalidRequest | errors.PayloadTooLarge]] = []
    limit = settings.max_payload_bytes
    checked: dict[str | None, tuple[int, int, bool]] = {}  # valid topics -> their limits
    for index, entry in enumerate(entries):
        topic = entry.topic if entry.topic is not None else default_topic
        known = checked.get(topic)
        if known is not None and entry.metadata is None and entry.key is None and len(entry.payload) <= limit:
            rows.append(
                NewRow(
                    topic,  # type: ignore[arg-type]  # known: a checked topic, never None
                    entry.payload,
                    None,
                    None,
                    entry.delay_seconds,
                    entry.priority,
                    known[0],
                    known[1],
                    known[2],
                )
            )
            continue
        if topic is None:
            problems.append((index, errors.InvalidRequest("topic is required (on the item or at the top level)")))
            continue
        try:
            item = build_item(
                settings, topic, entry.payload, entry.metadata, entry.key, entry.delay_seconds, entry.priority
            )
        except (errors.InvalidRequest, errors.PayloadTooLarge) as exc:
            problems.append((index, exc))
            continue
        if known is None:
            known = checked[topic] = await limits(topic)
        rows.append(item.resolved(*known))
    return rows, problems


def check_lease(count: int, visibility_timeout_seconds: int | None, max_batch_size: int) -> None:
    """A dequeue's count and visibility timeout, whichever edge it came through; raises InvalidRequest."""
    if count < 1:
        raise errors.InvalidRequest(f"count must be at least 1; got {count}")
    if count > max_batch_size:
        raise errors.InvalidRequest(f"at most {max_batch_size} messages per request; got {count}")
    if visibility_timeout_seconds is not None and not 1 <= visibility_timeout_seconds <= MAX_VISIBILITY_SECONDS:
        raise errors.InvalidRequest(
            f"visibility_timeout_seconds must be 1 to {MAX_VISIBILITY_SECONDS}; got {visibility_timeout_seconds}"
        )


def check_group(name: str | None) -> None:
    """A consumer group's name as a request gives it (None: none); raises InvalidRequest."""
    if name is not None and not GROUP_RE.fullmatch(name):
        raise errors.InvalidRequest(f"consumer_group must match {GROUP_PATTERN}")
