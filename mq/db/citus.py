"""Skiplock on Citus (docs/scale-out.md): which tables are spread over the workers by tenant, which are copied to
every node, which stay on the coordinator, and the statements that make a database so.

Every table that holds a tenant's rows is distributed by `tenant_id` and colocated with `messages`: a tenant's rows
of every table are on one worker, so a statement that names one tenant runs there alone, joins and functions
included. What is global (tenants, users with their grants and sessions, the deleted tenants' tombstones) is a
reference table, on every node; the jobs' own bookkeeping stays on the coordinator. The database functions are
distributed by their first argument, the tenant, so that a call runs on that tenant's worker.

`plan` is pure: from what a database holds (`State`) it gives the statements that finish its distribution, none
once done. `mq.db.engine.distribute` reads the state and runs them, after every migration (`skiplock migrate`): a
new database, an existing single-node one whose server gained Citus, and a table a later migration adds all end
distributed the same way. On plain Postgres nothing happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

#: Copied to every node, in this order (each one's foreign keys reference those before it).
REFERENCE_TABLES = ("tenants", "users", "grants", "sessions", "deleted_tenants")
#: Distributed by tenant_id and colocated with the first (`messages`).
TENANT_TABLES = (
    "messages",
    "deliveries",
    "consumer_groups",
    "deleted_groups",
    "admission_gates",
    "inflight_counts",
    "inflight_ended",
    "inflight_leases",
    "inflight_reservations",
    "message_log",
    "message_log_trims",
    "topic_configs",
    "topic_pauses",
    "topic_schemas",
    "schedules",
    "bulk_jobs",
    "topic_activity",
    "queue_samples",
    "topic_rollups",
    "topic_gauges",
    "consumer_group_gauges",
    "audit_log",
)
#: On the coordinator only: the migrations' revision, the jobs' runs and settings. Never joined with a tenant's tables.
COORDINATOR_TABLES = ("alembic_version", "job_runs", "worker_settings")
#: Partitions are distributed with their table (`message_log`'s, made by the archive job, are too).
PARTITIONED = {"message_log"}


@dataclass(frozen=True)
class ForeignKey:
    table: str
    name: str
    references: str
    definition: str


@dataclass
class State:
    """What a database holds that its distribution depends on (`mq.db.engine.distribute` reads it)."""

    #: table -> 'n' (reference) or 'h' (distributed by hash)
    distributed: dict[str, str] = field(default_factory=dict)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    #: the signatures (`name(types)`) of the functions distributed by an argument
    distributed_functions: set[str] = field(default_factory=set)
    #: the signatures of Skiplock's functions (`mq.queue.sql.functions`: each takes the tenant first), trigger
    #: functions left out
    functions: list[str] = field(default_factory=list)


def plan(state: State) -> list[str]:
    """The statements that distribute what is not distributed yet, in order; none when all is."""
    statements: list[str] = []
    pending = [t for t in (*REFERENCE_TABLES, *TENANT_TABLES) if t not in state.distributed]
    # Foreign keys from or to a table about to change kind go first and come back after: Citus distributes a table
    # with an identity column only without them, and a key from a local table would make it a "Citus local" one.
    moved = [fk for fk in state.foreign_keys if fk.table in pending or fk.references in pending]
    statements += [f"ALTER TABLE {fk.table} DROP CONSTRAINT {fk.name}" for fk in moved]
    for table in pending:
        if table in REFERENCE_TABLES:
            statements.append(f"SELECT create_reference_table('{table}')")
        elif table == TENANT_TABLES[0]:
            statements.append(f"SELECT create_distributed_table('{table}', 'tenant_id')")
        else:
            colocated = f"colocate_with => '{TENANT_TABLES[0]}'"
            statements.append(f"SELECT create_distributed_table('{table}', 'tenant_id', {colocated})")
    statements += [f"ALTER TABLE {fk.table} ADD CONSTRAINT {fk.name} {fk.definition}" for fk in moved]
    for signature in state.functions:  # run on the worker of their first argument, the tenant
        if signature not in state.distributed_functions:
            statements.append(
                f"SELECT create_distributed_function('{signature}', '$1', colocate_with => '{TENANT_TABLES[0]}')"
            )
    return statements


def unclassified(tables: Sequence[str]) -> list[str]:
    """The tables among `tables` (a schema's, partitions left out) that no list here places: a new table must be
    given a kind (`tests/integration/test_citus.py` checks the schema)."""
    known = {*REFERENCE_TABLES, *TENANT_TABLES, *COORDINATOR_TABLES}
    return sorted(t for t in tables if t not in known)
