"""The distribution plan (`mq.db.citus.plan`): what it does to a database that has nothing distributed yet, and
that it does nothing to one that is done."""

from __future__ import annotations

from mq.db import citus


def _fresh() -> citus.State:
    return citus.State(
        foreign_keys=[
            citus.ForeignKey(
                "users", "users_tenant_id_fkey", "tenants", "FOREIGN KEY (tenant_id) REFERENCES tenants(id)"
            ),
            citus.ForeignKey(
                "consumer_groups",
                "consumer_groups_tenant_id_fkey",
                "tenants",
                "FOREIGN KEY (tenant_id) REFERENCES tenants(id)",
            ),
        ],
        functions=["skiplock_group_ack_v2(bigint,text,uuid[],uuid[])"],
    )


def test_a_fresh_database_is_distributed_in_order() -> None:
    statements = citus.plan(_fresh())
    at = {s: n for n, s in enumerate(statements)}
    # the keys go before their tables change kind and come back after
    drop = at["ALTER TABLE consumer_groups DROP CONSTRAINT consumer_groups_tenant_id_fkey"]
    made = [at[s] for s in statements if "_table(" in s]
    add = at[
        "ALTER TABLE consumer_groups ADD CONSTRAINT consumer_groups_tenant_id_fkey "
        "FOREIGN KEY (tenant_id) REFERENCES tenants(id)"
    ]
    assert drop < min(made) and max(made) < add
    # reference tables first (tenants before the users that reference it), then messages, then its colocated tables
    created = [s for s in statements if "_table(" in s]
    assert created[: len(citus.REFERENCE_TABLES)] == [
        f"SELECT create_reference_table('{t}')" for t in citus.REFERENCE_TABLES
    ]
    assert created[len(citus.REFERENCE_TABLES)] == "SELECT create_distributed_table('messages', 'tenant_id')"
    assert statements[-1] == (
        "SELECT create_distributed_function('skiplock_group_ack_v2(bigint,text,uuid[],uuid[])', '$1', "
        "colocate_with => 'messages')"
    )


def test_a_distributed_database_needs_nothing() -> None:
    done = citus.State(
        distributed=dict.fromkeys(citus.REFERENCE_TABLES, "n") | dict.fromkeys(citus.TENANT_TABLES, "h"),
        distributed_functions={"skiplock_group_ack_v2(bigint,text,uuid[],uuid[])"},
        functions=["skiplock_group_ack_v2(bigint,text,uuid[],uuid[])"],
    )
    assert citus.plan(done) == []


def test_a_table_added_later_is_distributed_alone() -> None:
    state = citus.State(
        distributed=dict.fromkeys(citus.REFERENCE_TABLES, "n")
        | {t: "h" for t in citus.TENANT_TABLES if t != "topic_gauges"},
    )
    assert citus.plan(state) == [
        "SELECT create_distributed_table('topic_gauges', 'tenant_id', colocate_with => 'messages')"
    ]


def test_every_table_has_a_kind() -> None:
    assert citus.unclassified([*citus.TENANT_TABLES, "tenants", "job_runs"]) == []
    assert citus.unclassified(["messages", "new_table"]) == ["new_table"]
