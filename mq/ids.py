"""UUIDv7 ids: time-ordered, so new rows append to the primary key index instead of scattering over it."""

from __future__ import annotations

import os
import threading
import time
import uuid

from asyncpg.pgproto.pgproto import UUID

_lock = threading.Lock()
_last_ms = 0
_seq = 0


def uuid7() -> uuid.UUID:
    """A version 7 UUID (RFC 9562). Ids made in one process are strictly increasing."""
    return uuid7_batch(1)[0]


def uuid7_batch(n: int) -> list[uuid.UUID]:
    """n strictly increasing UUIDv7s, for one lock and one read of the random source.

    The 12 `rand_a` bits carry a counter within the millisecond (method 1 of the RFC), so a batch of ids keeps
    its input order when sorted; the 62 `rand_b` bits stay random. The ids are asyncpg's UUID (a `uuid.UUID`
    implemented in C): built straight from bytes, cheap to print, and the driver's own type.
    """
    global _last_ms, _seq  # noqa: PLW0603 - process-wide monotonic state is the point
    random = os.urandom(8 * n + 1)
    heads = []
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms > _last_ms:
            _last_ms, _seq = now_ms, random[-1] - 1  # a random start leaves room to count
        for _ in range(n):
            _seq += 1
            if _seq > 0xFFF:  # counter overflow: borrow the next millisecond
                _last_ms, _seq = _last_ms + 1, 0
            heads.append(((_last_ms << 16) | 0x7000 | _seq).to_bytes(8, "big"))
    ids: list[uuid.UUID] = []
    for i, head in enumerate(heads):
        tail = random[8 * i : 8 * i + 8]
        ids.append(UUID(head + bytes((tail[0] & 0x3F | 0x80,)) + tail[1:]))  # variant bits 10
    return ids
