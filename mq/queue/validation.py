"""Input rules the HTTP layer cannot check: sizes from settings, reserved topics, text Postgres cannot store."""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from mq import errors
from mq.queue.types import DLQ_SUFFIX, MAX_KEY_LENGTH, TOPIC_RE, EnqueueItem
from mq.settings import Settings


def check_text(value: str, field: str) -> None:
    """Postgres text holds neither NUL nor lone surrogates: refuse them as bad input, not a server error."""
    if "\x00" in value:
        raise errors.InvalidRequest(f"{field} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise errors.InvalidRequest(f"{field} is not valid Unicode") from None


@functools.lru_cache(maxsize=4096)  # a batch names the same topic on every item; invalid names raise, uncached
def check_topic(topic: str, *, for_enqueue: bool) -> None:
    if not TOPIC_RE.match(topic):
        raise errors.InvalidRequest("topic must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
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
    metadata_json = None
    if metadata is not None:
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
