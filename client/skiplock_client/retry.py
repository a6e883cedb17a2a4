"""When a request is tried again: 429s and 503s, and requests that got no answer; never a 4xx that will not change.

Backoff is exponential with full jitter (so that many clients refused at once do not come back at once), and a
server's `Retry-After` is a floor under it. A budget in attempts and in seconds bounds the whole.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from skiplock_client import errors


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    #: Tries in all, the first included (1: never retry).
    attempts: int = 10
    #: Seconds from the first try after which no retry starts.
    budget_seconds: float = 60.0
    #: The first backoff's ceiling; each retry doubles it, up to `max_backoff_seconds`.
    base_seconds: float = 0.1
    max_backoff_seconds: float = 10.0
    #: Retry every 429, a quota without `Retry-After` too (a bulk load waits for consumers to make room).
    every_429: bool = False

    def backoff(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1 for the first)."""
        ceiling = min(self.max_backoff_seconds, self.base_seconds * 2 ** (retry - 1))
        jitter = random.uniform(0, ceiling)  # noqa: S311 - spreading clients out, not a secret
        return max(retry_after, 0.0) + jitter / 4 if retry_after is not None else jitter


NO_RETRY = RetryPolicy(attempts=1)


def retryable(error: errors.SkiplockError, policy: RetryPolicy = NO_RETRY) -> bool:
    """Whether the same request may succeed later: a refusal for now (429 with a reason to wait), an unavailable
    dependency (503), or no answer at all. A quota without `Retry-After` will not lift by waiting, unless the policy
    says every 429 may (`every_429`). A failed TLS handshake never succeeds by retrying."""
    if isinstance(error, errors.TlsError):
        return False
    if isinstance(error, errors.TransportError | errors.Unavailable | errors.QueueFull | errors.RateLimited):
        return True
    return isinstance(error, errors.TooManyRequests) and (error.retry_after is not None or policy.every_429)
