"""`mq.db.routed`: which form a statement takes on Citus, and how a stepwise function is cut into parts."""

from __future__ import annotations

import pytest

import mq.queue.sql  # noqa: F401 (registers the data plane's Citus forms)
from mq.db.routed import ROUTED, Routed, Stepwise, routed
from mq.queue.sql.insert import InsertPlan, insert_statement


def _form(name: str) -> Routed | Stepwise:
    return ROUTED[name]


def test_an_insert_is_stepwise_one_part_per_insert() -> None:
    plain = insert_statement(InsertPlan(keyed=True, grouped=True))
    call = routed(plain)
    form = _form(plain.name)
    assert isinstance(form, Stepwise) and call is insert_statement(InsertPlan(keyed=True, grouped=True), citus=True)
    assert [[s.name for s in p.steps] for p in form.parts] == [
        ["dead_twins", "dead_twin_deliveries", "topic_groups"],
        ["stored"],
        ["minted"],
    ]
    # the groups read once, and passed to the insert and the deliveries; the twins' count to the insert
    assert form.captured == ("dead_twins", "topic_groups", "stored")
    assert call.parameters == plain.parameters and call.text.startswith("SELECT * FROM skiplock_routed_")


def test_an_ungrouped_insert_answers_with_its_own_returning() -> None:
    form = _form(insert_statement(InsertPlan()).name)
    assert isinstance(form, Stepwise) and form.captured == ()
    ddl = form.ddl(["bigint"] + ["text[]"] * 9, [("id", "uuid"), ("inserted", "boolean")], {})
    assert "RETURN QUERY INSERT INTO messages" in ddl and "FOR _row" not in ddl


def test_a_stepwise_function_passes_each_captured_step_as_arrays() -> None:
    form = _form(insert_statement(InsertPlan(uniform=True, grouped=True)).name)
    assert isinstance(form, Stepwise)
    columns = {
        "topic_groups": [("id", "bigint"), ("topic", "text"), ("name", "text")],
        "stored": [("id", "uuid"), ("topic", "text"), ("inserted", "boolean")],
    }
    ddl = form.ddl(["bigint"] * 9, [("stored", "bigint")], columns)
    assert "INTO _topic_groups_1, _topic_groups_2, _topic_groups_3" in ddl
    assert "FOR _row IN WITH topic_groups AS (\nSELECT * FROM unnest(_topic_groups_1" in ddl
    assert '_stored_3 := array_append(_stored_3, _row."inserted")' in ddl
    assert ddl.count("FROM consumer_groups") == 1  # read once
    with pytest.raises(ValueError, match="twice"):
        form.ddl(["bigint"] * 9, [("stored", "bigint")], {**columns, "stored": [("id", "uuid"), ("id", "uuid")]})


def test_statements_whose_inserts_are_sinks_stay_routed() -> None:
    """A lease's records, an ack's count-out: INSERT steps nothing reads after them, one main statement."""
    settled = {name: form for name, form in ROUTED.items() if name.startswith(("ack[", "nack[", "dequeue["))}
    assert settled and all(isinstance(form, Routed) for form in settled.values())


def test_the_migration_knows_every_routed_form_the_server_calls() -> None:
    """`skiplock migrate` makes the functions of the forms registered when `mq.migration` is imported: the
    repository's must all be among them (an insert's were not: a 500, "function skiplock_routed_... does not
    exist")."""
    import subprocess
    import sys

    script = (
        "import mq.migration\nfrom mq.db import routed\nknown = set(routed.ROUTED)\n"
        "import api.app, mq.queue.repository, workers\nprint(sorted(set(routed.ROUTED) - known))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
