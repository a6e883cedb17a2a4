"""A tenant's quotas as the data plane reads them: from Postgres, cached in process for a few seconds.

A change (PATCH /api/tenants/{slug}) reaches every instance through the same Redis invalidation as credentials
(`mq.tenancy.invalidation`); the short TTL heals a missed one.
"""

from __future__ import annotations

import time

import msgspec

from mq.db.repository import OperationsRepository


class Quotas(msgspec.Struct, frozen=True, gc=False):
    """Each quota is optional: None means no limit (see docs/semantics.md, "Quotas and max_depth")."""

    max_topics: int | None = None
    max_messages: int | None = None
    max_payload_bytes: int | None = None
    enqueue_rate: int | None = None


NO_QUOTAS = Quotas()
# Bounds of each quota (the columns and statements that use them hold 32- and 64-bit integers).
MAX_TOPICS_LIMIT = 2**31 - 1
MAX_BIGINT = 2**63 - 1
MAX_ENQUEUE_RATE = 1_000_000_000
_TTL_SECONDS = 5.0
_MAX_ENTRIES = 10_000
_DECODER = msgspec.json.Decoder(Quotas)


class QuotaCache:
    def __init__(self, repository: OperationsRepository, ttl_seconds: float = _TTL_SECONDS) -> None:
        self._repository = repository
        self._ttl = ttl_seconds
        self._cache: dict[int, tuple[float, Quotas]] = {}

    def cached(self, tenant_id: int) -> Quotas | None:
        """The tenant's quotas if cached and fresh (the hot path: no coroutine), else None."""
        hit = self._cache.get(tenant_id)
        return hit[1] if hit is not None and hit[0] > time.monotonic() else None

    async def of(self, tenant_id: int) -> Quotas:
        hit = self.cached(tenant_id)
        if hit is not None:
            return hit
        now = time.monotonic()
        stored = await self._repository.quotas_json(tenant_id)
        quotas = _DECODER.decode(stored) if stored else NO_QUOTAS
        if quotas == NO_QUOTAS:
            quotas = NO_QUOTAS  # one shared object: `is NO_QUOTAS` is the hot path's test
        if len(self._cache) >= _MAX_ENTRIES:
            self._cache.clear()
        self._cache[tenant_id] = (now + self._ttl, quotas)
        return quotas

    def forget(self) -> None:
        self._cache.clear()
