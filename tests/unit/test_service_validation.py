"""Pure validation rules of the queue service (no database needed)."""

import asyncio

import pytest

from api.schemas import BatchItem
from mq import errors
from mq.names import check_text
from mq.queue.types import NewRow
from mq.queue.validation import build_item, build_rows, check_topic
from mq.settings import Settings

SETTINGS = Settings()


def test_reserved_and_invalid_topics() -> None:
    check_topic("orders.eu-1_x", for_enqueue=True)
    check_topic("orders.dlq", for_enqueue=False)
    with pytest.raises(errors.ReservedTopic):
        check_topic("orders.dlq", for_enqueue=True)
    for bad in ["", ".x", "a b", "a/b", "x" * 201, "é"]:
        with pytest.raises(errors.InvalidRequest):
            check_topic(bad, for_enqueue=False)


def test_text_postgres_cannot_store() -> None:
    with pytest.raises(errors.InvalidRequest):
        check_text("a\x00b", "key")
    with pytest.raises(errors.InvalidRequest):
        check_text("\ud800", "key")
    check_text("ключ 🔑", "key")


def test_build_item_limits() -> None:
    assert build_item(SETTINGS, "t", b"x", {"a": 1}).metadata_json == '{"a":1}'
    with pytest.raises(errors.PayloadTooLarge):
        build_item(SETTINGS, "t", b"x" * (256 * 1024 + 1))
    with pytest.raises(errors.InvalidRequest):
        build_item(SETTINGS, "t", b"x", {"a": "x" * 20000})
    with pytest.raises(errors.InvalidRequest):
        build_item(SETTINGS, "t", b"x", {"a": "\x00"})
    with pytest.raises(errors.InvalidRequest):
        build_item(SETTINGS, "t", b"x", key="")


def test_a_batch_becomes_rows_with_their_topics_limits_asked_once_per_topic() -> None:
    asked: list[str] = []

    async def limits(topic: str) -> tuple[int, int, bool]:
        asked.append(topic)
        return (5, 60, False) if topic == "a" else (0, 0, True)

    entries = [
        BatchItem(b"1"),
        BatchItem(b"2", key="k"),
        BatchItem(b"3", topic="b"),
        BatchItem(b"4"),
        BatchItem(b"5", topic="a.dlq"),
    ]
    rows, problems = asyncio.run(build_rows(SETTINGS, "a", entries, limits))
    assert asked == ["a", "b"]
    assert rows[0] == NewRow("a", b"1", None, None, 0, 0, 5, 60, False)
    assert [(r.topic, r.key, r.max_retries, r.ttl_seconds, r.grouped) for r in rows[1:]] == [
        ("a", "k", 5, 60, False),
        ("b", None, 0, 0, True),
        ("a", None, 5, 60, False),
    ]
    assert [(index, type(error)) for index, error in problems] == [(4, errors.ReservedTopic)]
