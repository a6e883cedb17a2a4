"""Pure validation rules of the queue service (no database needed)."""

import pytest

from mq import errors
from mq.names import check_text
from mq.queue.validation import build_item, check_topic
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
