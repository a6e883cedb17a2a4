"""Statements composed from named fragments (`mq.db.statements`), and the registry of the data plane's."""

from __future__ import annotations

import re

import pytest

import mq.queue.repository  # noqa: F401  (imports every statement of the data plane)
from mq.db.statements import REGISTRY, Fragment, compose, statement
from mq.queue.sql import dequeue, insert, settle
from mq.queue.types import DeliveryPlan


def test_named_parameters_are_numbered_with_the_tenant_first_and_bound_by_name() -> None:
    made = statement("test: numbered", "SELECT $topic, $count, $topic WHERE tenant_id = $tenant")
    assert made.text == "SELECT $2, $3, $2 WHERE tenant_id = $1"
    assert made.parameters == ("tenant", "topic", "count")
    assert made.args(count=5, topic="t", tenant=7, unused="x") == (7, "t", 5)
    with pytest.raises(KeyError):
        made.args(tenant=7, topic="t")


def test_casts_and_positional_parameters_are_left_alone() -> None:
    made = statement("test: casts", "SELECT $tenant::int8, '{}'::jsonb, $count::text[]")
    assert made.text == "SELECT $1::int8, '{}'::jsonb, $2::text[]"


def test_a_result_that_only_reads_the_last_step_is_that_step() -> None:
    picked = Fragment("picked", "SELECT id FROM messages WHERE tenant_id = $tenant", materialized=True)
    leased = Fragment("leased", "UPDATE messages SET status = 'processing' FROM picked RETURNING id")
    made = compose("test: elided", [picked, leased], "SELECT * FROM leased")
    assert made.text.startswith("WITH picked AS MATERIALIZED (\nSELECT id")
    assert made.text.endswith("\nUPDATE messages SET status = 'processing' FROM picked RETURNING id")
    kept = compose("test: kept", [picked, leased], "SELECT count(*) FROM leased")
    assert "leased AS (" in kept.text


def test_a_name_is_one_statement() -> None:
    with pytest.raises(ValueError, match="two statements"):
        statement("dequeue[plain]", "SELECT $tenant")
    with pytest.raises(ValueError, match="used twice"):
        compose("test: twice", [Fragment("a", "SELECT 1"), Fragment("a", "SELECT 2")], "SELECT 1")


def test_every_registered_statement_takes_the_tenant_first() -> None:
    """The promise of `mq.queue.sql`: `$1` is the tenant id, so no statement touches another tenant's rows."""
    assert REGISTRY
    for name, made in REGISTRY.items():
        if name.startswith("test: "):
            continue
        assert made.parameters[0] == "tenant", name
        # a tenant_id compared with it, the tenant passed first to a database function (a routed one's too:
        # `mq.db.routed`, its statement checked as itself), or the rows an insert stores given $1 as their
        # tenant_id (the column after id)
        scoped = re.search(
            r"tenant_id(\s*\+\s*0)? = \$1\b|\w+_v\d+\(\s*\$1\b|skiplock_routed_\w+\(\$1\b"
            r"|INSERT INTO \w+ AS \w+ \(id, tenant_id\b[^)]*\)\s*SELECT [\w.]+, \$1,",
            made.text,
        )
        assert scoped, f"{name} never compares a tenant_id to $1 nor passes it to a function"


@pytest.mark.parametrize("plan", DeliveryPlan.every(grouped=True, limited=True), ids=lambda p: p.name)
def test_each_dequeue_plan_composes_its_own_steps(plan: DeliveryPlan) -> None:
    made = dequeue.dequeue_statement(plan)
    assert made is REGISTRY[f"dequeue[{plan.name}]"]
    steps = set(re.findall(r"(\w+) AS (?:MATERIALIZED )?\(\n", made.text))
    assert ({"claim", "recorded", "given_back"} <= steps) == plan.limited
    assert ("received" in steps) == plan.grouped
    assert ("FROM deliveries AS d" in made.text) == plan.grouped
    assert "reservation" in made.parameters if plan.limited else "reservation" not in made.parameters


@pytest.mark.parametrize("plan", DeliveryPlan.every(grouped=True, limited=True, logged=True), ids=lambda p: p.name)
def test_each_ack_plan_composes_its_own_steps(plan: DeliveryPlan) -> None:
    made = settle.ack_statement(plan)
    steps = set(re.findall(r"(\w+) AS (?:MATERIALIZED )?\(\n", made.text))
    # a group's ack counts out (a limited group's leases) and logs (its last ack) in its function
    assert ({"freed", "ended"} <= steps) == (plan.limited and not plan.grouped)
    assert ("logged" in steps) == (plan.logged and not plan.grouped)
    assert ("skiplock_group_ack_v" in made.text) == plan.grouped
    if plan.grouped:
        assert made.text.rstrip().endswith(f"{str(plan.limited).lower()})")


@pytest.mark.parametrize("plan", insert.InsertPlan.every(), ids=lambda p: p.name)
def test_each_insert_plan_composes_its_own_steps(plan: insert.InsertPlan) -> None:
    made = insert.insert_statement(plan)
    assert made is REGISTRY[f"insert[{plan.name}]"]
    assert ("dead_twins AS (" in made.text) == plan.keyed
    assert ("admitted AS MATERIALIZED (" in made.text) == plan.admitted
    assert ("minted AS (" in made.text) == plan.grouped
    assert ("ON CONFLICT" in made.text) == plan.keyed
    assert ("$groups" not in made.text) and (("groups" in made.parameters) == plan.to_groups)
    assert ("ids" in made.parameters) and (("topics" in made.parameters) != plan.uniform)
