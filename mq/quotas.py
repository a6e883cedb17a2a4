"""A tenant's quotas as the data plane reads them: from Postgres, cached in process for a few seconds.

A change (PATCH /api/tenants/{slug}) reaches every instance through the same Redis invalidation as credentials
(`mq.tenancy.invalidation`); the short TTL heals a missed one.
"""

from __future__ import annotations

import msgspec

from mq.db.repository import OperationsRepository
from mq.ttl_cache import TtlCache


class Quotas(msgspec.Struct, frozen=True, gc=False):
    """Each quota is optional: None means no limit (see docs/semantics.md, "Quotas and max_depth")."""

    max_topics: int | None = None
    max_messages: int | None = None
    max_payload_bytes: int | None = None
    enqueue_rate: int | None = None
    max_schedules: int | None = None  # None: the platform's `max_schedules_per_tenant`


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
        self._cache: TtlCache[int, Quotas] = TtlCache(ttl_seconds, _MAX_ENTRIES)

    def cached(self, tenant_id: int) -> Quotas | None:
        """The tenant's quotas if cached and fresh (the hot path: no coroutine), else None."""
        return self._cache.get(tenant_id)

    async def of(self, tenant_id: int) -> Quotas:
        hit = self.cached(tenant_id)
        if hit is not None:
            return hit
        stored = await self._repository.quotas_json(tenant_id)
        quotas = _DECODER.decode(stored) if stored else NO_QUOTAS
        if quotas == NO_QUOTAS:
            quotas = NO_QUOTAS  # one shared object: `is NO_QUOTAS` is the hot path's test
        return self._cache.put(tenant_id, quotas)

    def forget(self) -> None:
        self._cache.clear()
