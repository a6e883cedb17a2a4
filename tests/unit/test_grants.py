import pytest

from mq.tenancy.grants import allowed, allows_every_topic, covers, valid_pattern


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("*", "anything", True),
        ("*", "x.dlq", True),
        ("orders", "orders", True),
        ("orders", "orders.dlq", True),  # a topic's grant covers its dead letters
        ("orders", "orders.eu", False),
        ("orders", "ordersx", False),
        ("orders.*", "orders", True),
        ("orders.*", "orders.eu", True),
        ("orders.*", "orders.eu.west", True),
        ("orders.*", "orders.dlq", True),
        ("orders.*", "orders.eu.dlq", True),
        ("orders.*", "ordersx", False),
        ("orders.*", "order", False),
        ("orders.eu", "orders", False),
        ("orders.eu", "orders.eu.dlq", True),
        ("orders.dlq", "orders.dlq", True),
    ],
)
def test_topic_patterns(pattern: str, topic: str, expected: bool) -> None:
    assert covers(pattern, topic) is expected


def test_actions_are_separate() -> None:
    grants = [("produce", "orders.*"), ("read", "*")]
    assert allowed(grants, "produce", "orders.eu")
    assert not allowed(grants, "consume", "orders.eu")
    assert allowed(grants, "read", "anything")
    assert allows_every_topic(grants, "read") and not allows_every_topic(grants, "produce")
    assert not allowed([], "read", "orders")


@pytest.mark.parametrize(
    ("pattern", "ok"),
    [
        ("*", True),
        ("orders", True),
        ("orders.*", True),
        ("a.b-c_d", True),
        ("", False),
        ("*.orders", False),
        ("orders*", False),
        (".*", False),
        ("orders.**", False),
        ("bad topic", False),
        ("x" * 201, False),
    ],
)
def test_valid_patterns(pattern: str, ok: bool) -> None:
    assert valid_pattern(pattern) is ok
