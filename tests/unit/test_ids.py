import time
import uuid

import pytest

import mq.ids
from mq.ids import uuid7, uuid7_batch


@pytest.mark.parametrize("n", [1, 2, 11, 12, 13, 100, 20000])
def test_uuid7_batches_are_rfc_9562_version_7_and_strictly_increasing(n: int) -> None:
    before = uuid7()
    ids = uuid7_batch(n)
    assert len(ids) == n
    assert all(i.version == 7 and i.variant == uuid.RFC_4122 for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == n
    assert before < ids[0]
    assert uuid7() > ids[-1]


def test_uuid7_carries_the_millisecond_clock() -> None:
    now_ms = time.time_ns() // 1_000_000
    stamp = uuid7().int >> 80
    assert now_ms - 1000 <= stamp <= now_ms + 1000


def test_a_full_millisecond_counter_borrows_the_next_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    # Start three ids short of the counter's end within a millisecond far in the future, so the clock does not
    # reset it: the batch must run over into the next millisecond and stay ordered.
    future_ms = time.time_ns() // 1_000_000 + 60_000
    for n in (8, 40):  # the short path and the bulk path
        monkeypatch.setattr(mq.ids, "_clock", (future_ms << 12) | 0xFFC)
        ids = uuid7_batch(n)
        assert ids == sorted(ids) and len(set(ids)) == n
        assert {i.int >> 80 for i in ids} == {future_ms, future_ms + 1}
        assert all(i.version == 7 and i.variant == uuid.RFC_4122 for i in ids)
