"""The pure parts of admission: which gates a write passes, refusals as domain errors, the refusal memo."""

from __future__ import annotations

from collections import Counter

import asyncpg

from mq import errors
from mq.queue.admission import NO_CAPS, Caps
from mq.queue.repository import refusal


def test_uncapped_writes_pass_no_gate() -> None:
    assert not NO_CAPS
    assert NO_CAPS.gates(Counter({"a": 3})) == []


def test_gates_come_tenant_first_then_capped_topics_sorted() -> None:
    caps = Caps(max_messages=100, max_topics=5, depths=(("b", 10), ("a", 20)))
    rows = Counter({"b": 2, "c": 1, "a": 4})
    assert caps.gates(rows) == [("", 7, 100), ("a", 4, 20), ("b", 2, 10)]
    scopes, counts, caps_, max_topics, topics = caps.arguments(rows)
    assert (scopes, counts, caps_, max_topics, topics) == (["", "a", "b"], [7, 4, 2], [100, 20, 10], 5, ["a", "b", "c"])
    assert Caps(depths=(("a", 1),)).arguments(Counter({"a": 1}))[4] == []  # no max_topics: no topics to check


def test_merging_keeps_the_tighter_cap() -> None:
    merged = Caps(max_messages=10).merge(Caps(max_messages=5, max_topics=3, depths=(("a", 1),)))
    assert merged == Caps(5, 3, (("a", 1),))
    assert NO_CAPS.merge(Caps(max_topics=2)) == Caps(max_topics=2)


def _postgres_error(sqlstate: str, detail: str, hint: str) -> asyncpg.PostgresError:
    exc = asyncpg.PostgresError("refused")
    exc.sqlstate, exc.detail, exc.hint = sqlstate, detail, hint  # type: ignore[attr-defined]
    return exc


def test_refusals_become_domain_errors() -> None:
    full = refusal(_postgres_error("SKQ01", "orders", "10/10"))
    assert isinstance(full, errors.QueueFull)
    assert full.details == {"topic": "orders", "max_depth": 10, "depth": 10} and full.retry_after == 1
    quota = refusal(_postgres_error("SKQ02", "", "99/100"))
    assert isinstance(quota, errors.QuotaExceeded) and quota.retry_after == 1
    topics = refusal(_postgres_error("SKQ03", "", "3/3"))
    assert isinstance(topics, errors.QuotaExceeded) and topics.retry_after is None  # 403: waiting will not help
    assert refusal(_postgres_error("23505", "", "")) is None


def test_copy_admission_is_one_literal_call() -> None:
    from mq.queue.sql.insert import copy_admission

    assert copy_admission(7, (["orders"], [100], [5000], None, [])) == "skiplock_admit_copy_v2(7, 'orders', 100, 5000)"
    both = copy_admission(7, (["", "orders"], [100, 100], [10**6, 5000], 3, ["orders"]))
    assert both == (
        "skiplock_admit_copy_all_v2(7, ARRAY['', 'orders']::text[], ARRAY[100, 100]::int8[], "
        "ARRAY[1000000, 5000]::int8[], 3::int4, ARRAY['orders']::text[])"
    )
    assert "'o''x'" in copy_admission(1, (["o'x"], [1], [1], None, []))  # quotes doubled, though names have none
