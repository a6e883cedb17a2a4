"""Which exceptions are a dependency's fault (Postgres or Redis down, restarting, overloaded, too slow) rather than
a bug: the API answers them `503 unavailable` with `Retry-After`, never 500 (docs/reliability.md)."""

from __future__ import annotations

import asyncpg
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

# Postgres SQLSTATE classes that mean "not now": 08 connection exception, 53 insufficient resources (too many
# connections, out of memory or disk), 57 operator intervention (shutdown, restart, statement timeout, cancel),
# 58 system error, and 40001/40P01 (a serialization failure or deadlock victim: retrying is the cure).
_TRANSIENT_CLASSES = ("08", "53", "57", "58")
_TRANSIENT_STATES = ("40001", "40P01")
# Citus: a statement planned before its shard moved or split (a tenant isolated, a rebalance) finds the shard gone,
# the next one is planned anew (docs/scale-out.md, "Placing tenants"); a worker unreachable or gone mid-statement is
# told as an internal error (XX000) when the coordinator had already used its connection ("A worker's failure").
_CITUS_TRANSIENT = (
    "could not find valid entry for shard",
    "failure on connection marked as essential",
    "connection to the remote node",
)


def is_dependency_fault(exc: BaseException) -> bool:
    """Whether `exc` (or what it wraps) comes from an unreachable, restarting or overloaded dependency."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, PoolTimeout | RedisConnectionError | RedisTimeoutError | ConnectionError | TimeoutError):
            return True
        if isinstance(
            current,
            asyncpg.InterfaceError | asyncpg.exceptions.ConnectionDoesNotExistError | asyncpg.InternalClientError,
        ):
            # The connection went away under a statement. InternalClientError ("cannot switch to state 12") is
            # asyncpg's protocol state after a server terminated a connection mid-operation (asyncpg #1069).
            return True
        if isinstance(current, OSError):
            return True
        if isinstance(current, asyncpg.PostgresError):
            state = getattr(current, "sqlstate", "") or ""
            citus = str(getattr(current, "message", "")).startswith(_CITUS_TRANSIENT)
            return state[:2] in _TRANSIENT_CLASSES or state in _TRANSIENT_STATES or citus
        if isinstance(current, DBAPIError):
            current = current.orig
            continue
        current = current.__cause__ or current.__context__
    return False
