"""Which errors are a dependency's fault (`mq.faults`): answered 503 with Retry-After, never 500."""

from __future__ import annotations

import asyncpg

from mq.faults import is_dependency_fault


def _postgres_error(sqlstate: str, message: str) -> asyncpg.PostgresError:
    exc = asyncpg.PostgresError(message)
    exc.sqlstate, exc.message = sqlstate, message  # type: ignore[attr-defined]
    return exc


def test_a_restart_a_timeout_and_a_moved_shard_are_the_databases_fault_a_bad_statement_is_not() -> None:
    assert is_dependency_fault(_postgres_error("57P01", "terminating connection due to administrator command"))
    assert is_dependency_fault(_postgres_error("57014", "canceling statement due to statement timeout"))
    assert is_dependency_fault(_postgres_error("40P01", "deadlock detected"))
    # Citus: a statement planned before its shard moved or split (a tenant isolated, a rebalance)
    assert is_dependency_fault(_postgres_error("XX000", "could not find valid entry for shard 102014"))
    # Citus: a worker stopped under a statement that had already used its connection (test_citus.py's drill)
    assert is_dependency_fault(_postgres_error("XX000", "failure on connection marked as essential: 10.0.0.2:5432"))
    assert not is_dependency_fault(_postgres_error("XX000", "cache lookup failed for relation 1"))
    assert not is_dependency_fault(_postgres_error("42601", "syntax error at or near"))
    assert not is_dependency_fault(ValueError("a bug"))
