"""The client's models against the served API's contract (`docs/openapi.json`, the reviewed snapshot): every field
the client reads is one the document answers with, and every field it cannot do without (no default) is one the
document always answers; every field a request body sends is one the document takes, and every field the
document requires is sent. A renamed or dropped field breaks this test, not a user's program."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from skiplock_client import models

DOCUMENT = json.loads((Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text())
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]

# client model -> the schema of what the server answers with
ANSWERS = {
    models.Attempt: "AttemptView",
    models.Delivery: "DeliveryView",
    models.Message: "MessageDetailView",
    models.AuditEntry: "AuditEntryView",
    models.AuditPage: "AuditPageView",
    models.ConsumerGroup: "ConsumerGroupView",
    models.ConsumerGroupStats: "ConsumerGroupStatsView",
    models.ConsumerGroups: "ConsumerGroupsView",
    models.TopicConfig: "TopicConfig",
    models.TopicSchemaSummary: "SchemaSummaryView",
    models.TopicSchema: "SchemaView",
    models.Topic: "TopicSummaryView",
    models.StatRow: "StatRowView",
    models.AckFailure: "AckFailureView",
    models.BatchAck: "BatchAckView",
    models.Quotas: "Quotas",
    models.TenantUsage: "TenantUsageView",
    models.Tenant: "TenantView",
    models.User: "UserView",
    models.Grant: "GrantView",
    models.MyGrant: "MyGrantView",
    models.Me: "MeView",
    models.Schedule: "ScheduleView",
    models.IdView: "IdView",
    models.IdsView: "IdsView",
    models.DequeueView: "DequeueView",
    models.NackView: "NackView",
    models.ExtendView: "ExtendView",
    models.PeriodicSchedule: "PeriodicScheduleView",
    models.LogEntry: "LogEntryView",
    models.LogPage: "LogPageView",
    models.ReplayedView: "ReplayedView",
    models.StatsView: "StatsView",
    models.VersionView: "VersionView",
}
# client model -> the schema of the request body it is sent as (`Item` is the caller's, made into an EnqueueBody)
BODIES = [
    (models.EnqueueBody, "EnqueueBody"),
    (models.EnqueueBody, "BatchItem"),
    (models.BatchBody, "BatchEnqueueBody"),
    (models.AckItem, "AckItem"),
    (models.BatchAckBody, "BatchAckBody"),
]


def _fields(model: type[Any]) -> dict[str, bool]:
    """Each field's name on the wire, and whether it has a default."""
    return {f.encode_name: f.required is False for f in msgspec.structs.fields(model)}


@pytest.mark.parametrize("model", list(ANSWERS), ids=lambda m: m.__name__)
def test_what_the_client_reads_is_what_the_server_answers(model: type[Any]) -> None:
    schema = SCHEMAS[ANSWERS[model]]
    properties, required = set(schema.get("properties", {})), set(schema.get("required", []))
    fields = _fields(model)
    assert sorted(set(fields) - properties) == [], f"{model.__name__} reads fields the document does not answer"
    needed = {name for name, has_default in fields.items() if not has_default}
    assert sorted(needed - required) == [], f"{model.__name__} needs fields the document may leave out"


@pytest.mark.parametrize(("model", "name"), BODIES, ids=[name for _, name in BODIES])
def test_what_the_client_sends_is_what_the_server_takes(model: type[Any], name: str) -> None:
    schema = SCHEMAS[name]
    properties, required = set(schema.get("properties", {})), set(schema.get("required", []))
    fields = _fields(model)
    assert sorted(set(fields) - properties) == [], f"{model.__name__} sends fields the document does not take"
    assert sorted(required - set(fields)) == [], f"{model.__name__} leaves out fields the document requires"
