import pytest

from mq.tenancy.grants import GrantTuple, allowed, allows_every_topic, consumer_groups, covers, valid_pattern


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
    grants: list[GrantTuple] = [("produce", "orders.*", None), ("read", "*", None)]
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


def test_consume_grants_may_pin_consumer_groups() -> None:
    pinned: list[GrantTuple] = [("consume", "orders", "billing"), ("consume", "orders.*", "audit"), ("read", "*", None)]
    assert consumer_groups(pinned, "orders") == {"billing", "audit"}
    assert consumer_groups(pinned, "orders.dlq") == {"billing", "audit"}  # its dead letters too
    assert consumer_groups(pinned, "orders.eu") == {"audit"}
    assert consumer_groups(pinned, "payments") == frozenset()  # no consume grant: require_grant refuses first
    assert consumer_groups([*pinned, ("consume", "*", None)], "orders") is None  # an unpinned grant: any group
