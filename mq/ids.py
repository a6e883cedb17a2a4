"""UUIDv7 ids: time-ordered, so new rows append to the primary key index instead of scattering over it."""

from __future__ import annotations

import os
import struct
import threading
import time
import uuid

from asyncpg.pgproto.pgproto import UUID

_lock = threading.Lock()
# The last id's 48-bit millisecond and 12-bit counter as one number (`ms << 12 | counter`): counting up past
# 0xFFF carries into the millisecond, which is how the RFC lets a generator borrow from the next one.
_clock = 0
# Setting the variant bits (10xxxxxx) of a byte, as a `bytes.translate` table.
_VARIANT = bytes((b & 0x3F) | 0x80 for b in range(256))
# Below this many ids, a plain loop is cheaper than the byte-slicing of the bulk path.
_BULK_MIN = 12


def uuid7() -> uuid.UUID:
    """A version 7 UUID (RFC 9562). Ids made in one process are strictly increasing."""
    return uuid7_batch(1)[0]


def uuid7_batch(n: int) -> list[uuid.UUID]:
    """n strictly increasing UUIDv7s, for one lock and one read of the random source.

    The 12 `rand_a` bits carry a counter within the millisecond (method 1 of the RFC), so a batch of ids keeps
    its input order when sorted; the 62 `rand_b` bits stay random. The ids are asyncpg's UUID (a `uuid.UUID`
    implemented in C): built straight from bytes, cheap to print, and the driver's own type. A batch costs about
    0.3 µs per id (batch enqueue makes up to a thousand per request).
    """
    global _clock  # noqa: PLW0603 - process-wide monotonic state is the point
    random = os.urandom(8 * n + 1)
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms > _clock >> 12:
            _clock = (now_ms << 12) | random[-1]  # a random start below 256 leaves room to count
        first = _clock + 1
        _clock += n
    if n < _BULK_MIN:
        ids: list[uuid.UUID] = []
        for i, clock in enumerate(range(first, first + n)):
            head = ((clock >> 12) << 16) | 0x7000 | (clock & 0xFFF)
            tail = int.from_bytes(random[8 * i : 8 * i + 8]) & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
            ids.append(UUID(((head << 64) | tail).to_bytes(16)))
        return ids
    heads = b"".join(_heads(first, first + n))
    # Interleave 8-byte heads and 8-byte random tails into 16-byte ids, one byte column at a time.
    blob = bytearray(16 * n)
    for k in range(8):
        blob[k::16] = heads[k::8]
        blob[8 + k :: 16] = random[k : 8 * n : 8]
    blob[8::16] = blob[8::16].translate(_VARIANT)
    return list(map(UUID, struct.unpack("16s" * n, blob)))


def _heads(first: int, end: int) -> list[bytes]:
    """The ids' first 8 bytes (48-bit ms, version 7, 12-bit counter) for clock values first..end-1, packed in
    runs that share a millisecond."""
    runs = []
    while first < end:
        run_end = min(end, ((first >> 12) + 1) << 12)
        head = ((first >> 12) << 16) | 0x7000 | (first & 0xFFF)
        runs.append(struct.pack(f">{run_end - first}Q", *range(head, head + run_end - first)))
        first = run_end
    return runs
