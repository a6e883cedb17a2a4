"""What keeps one tenant's flood its own, while other tenants are active on this process (docs/operations.md,
"Fairness between tenants"):

- a cap on how many of one tenant's batch statements run at once. Batches (`_ALONE_MIN_ROWS` rows and more) each run
  their own statement, beside everyone else's. Without a cap, a tenant with many producers and greedy consumers has
  as many statements in Postgres as it has requests in flight; on a small database server those statements fight
  each other and everyone else for the same cores, and a quiet tenant's single enqueue waits behind all of them
  (`make loadtest-fairness` on 2 cores: the quiet tenant's p99 delivery went from 6 to 314 ms). With the cap, the
  flooding tenant's further statements wait here, in the process, where they cost nothing;
- a default enqueue rate (`enqueue_wait`) for tenants without an enqueue_rate quota of their own: with the cap
  alone, the flooding tenant still reached 25,000 msg/s and the quiet tenant's p99 was 4.4x of alone; with the
  default (500 msg/s) it stays near 2x. The measured runs are in loadtests/RESULTS.md, "Fairness (noisy
  neighbour)", rather than restated here.

A tenant alone on the process is neither capped nor counted: both apply while another tenant has sent a statement
within the last `ACTIVE_SECONDS`. Alone, a tenant's producers and consumers may then use every connection (at 10,000
msg/s in batches on 2 cores, one statement at a time left the consumers seconds behind).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

#: How recently another tenant must have sent a statement for the cap to apply.
ACTIVE_SECONDS = 2.0


class TenantGate:
    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic, enqueue_rate: int = 0) -> None:
        """`limit` statements of one tenant at once while others are active; 0 means no cap. `enqueue_rate`: the
        messages per second a tenant may enqueue while others are active (see `enqueue_wait`); 0 means no limit."""
        self.limit = limit
        self.enqueue_rate = enqueue_rate
        self._now = clock
        # Per tenant limited so far: (allowance in messages, when it was last updated). It may go negative: a batch
        # larger than what is left is let through, and the tenant then owes the difference.
        self._allowances: dict[int, tuple[float, float]] = {}
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._users: dict[int, int] = {}  # holders and waiters per tenant, to drop idle semaphores
        # The two tenants seen last, each with when: enough to tell whether anyone but a given tenant is active.
        self._latest: tuple[int, float] = (-1, float("-inf"))
        self._before: tuple[int, float] = (-1, float("-inf"))

    def seen(self, tenant_id: int) -> None:
        """A statement of the tenant's (any: coalesced ones too); O(1), on every request."""
        now = self._now()
        if self._latest[0] != tenant_id:
            self._before = self._latest
        self._latest = (tenant_id, now)

    def others_active(self, tenant_id: int) -> bool:
        since = self._now() - ACTIVE_SECONDS
        # The two entries are distinct tenants, so at least one of them is not `tenant_id`.
        return any(other != tenant_id and at >= since for other, at in (self._latest, self._before))

    def contended(self, tenant_id: int) -> bool:
        """Whether the tenant's statements are capped now (a cap is set and another tenant is active)."""
        return bool(self.limit) and self.others_active(tenant_id)

    def enqueue_wait(self, tenant_id: int, rows: int) -> float:
        """Seconds the tenant must wait before enqueueing `rows` messages (0: go ahead, and they are counted). While
        another tenant is active, each may enqueue `enqueue_rate` messages per second in this process, with bursts
        of one second's worth: the enqueue-rate quota that applies by default (a tenant with a quota of its own is
        not asked). Alone, or with no rate set, nothing is counted."""
        if not self.enqueue_rate or not self.others_active(tenant_id):
            return 0.0
        now, rate = self._now(), self.enqueue_rate
        allowance, at = self._allowances.get(tenant_id, (float(rate), now))
        allowance = min(float(rate), allowance + (now - at) * rate)
        if allowance <= 0:
            self._allowances[tenant_id] = (allowance, now)
            return -allowance / rate or 1 / rate
        self._allowances[tenant_id] = (allowance - rows, now)
        return 0.0

    @contextlib.asynccontextmanager
    async def slot(self, tenant_id: int) -> AsyncIterator[None]:
        """Hold one of the tenant's slots while the block runs (none needed while the tenant is alone)."""
        if not self.limit:
            yield
            return
        capped = self.others_active(tenant_id)
        self.seen(tenant_id)
        semaphore = self._semaphores.get(tenant_id)
        if not capped and semaphore is None:
            yield
            return
        if semaphore is None:
            semaphore = self._semaphores[tenant_id] = asyncio.Semaphore(self.limit)
        self._users[tenant_id] = self._users.get(tenant_id, 0) + 1
        try:
            async with semaphore:
                yield
        finally:
            users = self._users[tenant_id] - 1
            if users:
                self._users[tenant_id] = users
            else:
                del self._users[tenant_id]
                del self._semaphores[tenant_id]
