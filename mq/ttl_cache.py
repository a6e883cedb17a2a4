"""A small in-process cache whose entries are fresh for a fixed time: credentials, tenants, quotas, topic configs.

Bounded by emptying it when full rather than by LRU bookkeeping: its hits are on every request's hot path and
must cost one dict lookup and one clock read, and its misses refill from Postgres or Redis. Entries can be made
stale all at once (`expire_all`) while staying readable (`stale`): a caller that renews an entry may use what it
knew (the authenticator keeps the password hash a credential was verified against).
"""

from __future__ import annotations

import time
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    __slots__ = ("_entries", "_generation", "_max_entries", "ttl")

    def __init__(self, ttl_seconds: float, max_entries: int) -> None:
        """`ttl_seconds` <= 0 caches nothing."""
        self.ttl = ttl_seconds
        self._max_entries = max_entries
        self._entries: dict[K, tuple[float, int, V]] = {}  # key -> (fresh until, generation, value)
        self._generation = 0

    def get(self, key: K) -> V | None:
        """The value if cached and fresh, else None."""
        hit = self._entries.get(key)
        if hit is None or hit[0] <= time.monotonic() or hit[1] != self._generation:
            return None
        return hit[2]

    def stale(self, key: K) -> V | None:
        """The value if cached, fresh or not."""
        hit = self._entries.get(key)
        return hit[2] if hit is not None else None

    def put(self, key: K, value: V) -> V:
        if self.ttl > 0:
            if len(self._entries) >= self._max_entries:
                self._entries.clear()
            self._entries[key] = (time.monotonic() + self.ttl, self._generation, value)
        return value

    def full(self) -> bool:
        """The next `put` empties the cache (callers keeping a side table keyed alike empty it too)."""
        return len(self._entries) >= self._max_entries

    def pop(self, key: K) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()

    def expire_all(self) -> None:
        """Make every entry stale; `stale` still reads them."""
        self._generation += 1

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)
