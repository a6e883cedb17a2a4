"""The client's models and errors against the OpenAPI document the server serves (its reviewed snapshot,
docs/openapi.json, which tests/unit/test_openapi_document.py keeps equal to the served one): a field renamed,
added, dropped or made optional on either side fails here."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from skiplock_client import errors, models

from tests.support.servers import ROOT

SCHEMAS: dict[str, Any] = json.loads((ROOT / "docs" / "openapi.json").read_text())["components"]["schemas"]

# client struct -> the schema it decodes (answers) or encodes (requests)
PAIRS: list[tuple[type[msgspec.Struct], str]] = [
    (models.Message, "MessageDetailView"),
    (models.Attempt, "AttemptView"),
    (models.MessageStory, "MessageStoryView"),
    (models.BulkJob, "BulkJobView"),
    (models.LeaseHolder, "ConsumerView"),
    (models.Consumers, "ConsumersView"),
    (models.ErrorClass, "ErrorClassView"),
    (models.ErrorClasses, "ErrorClassesView"),
    (models.StoryEvent, "StoryEventView"),
    (models.StoryGroup, "StoryGroupView"),
    (models.Delivery, "DeliveryView"),
    (models.ConsumerGroup, "ConsumerGroupView"),
    (models.ConsumerGroupStats, "ConsumerGroupStatsView"),
    (models.ConsumerGroups, "ConsumerGroupsView"),
    (models.AuditEntry, "AuditEntryView"),
    (models.AuditPage, "AuditPageView"),
    (models.Topic, "TopicSummaryView"),
    (models.TopicConfig, "TopicConfig"),
    (models.TopicConfigView, "TopicConfigView"),
    (models.TopicSchema, "SchemaView"),
    (models.PeriodicSchedule, "PeriodicScheduleView"),
    (models.TopicSchemaSummary, "SchemaSummaryView"),
    (models.StatRow, "StatRowView"),
    (models.AckFailure, "AckFailureView"),
    (models.BatchAck, "BatchAckView"),
    (models.Quotas, "Quotas"),
    (models.Tenant, "TenantView"),
    (models.User, "UserView"),
    (models.Grant, "GrantView"),
    (models.Me, "MeView"),
    (models.Schedule, "ScheduleView"),
    (models.IdView, "IdView"),
    (models.IdsView, "IdsView"),
    (models.DequeueView, "DequeueView"),
    (models.NackView, "NackView"),
    (models.ExtendView, "ExtendView"),
    (models.StatsView, "StatsView"),
    (models.VersionView, "VersionView"),
    (models.EnqueueBody, "BatchItem"),
    (models.AckItem, "AckItem"),
    (models.BatchAckBody, "BatchAckBody"),
]


def _fields(struct: type[msgspec.Struct]) -> tuple[set[str], set[str]]:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    names = {f.encode_name for f in info.fields}
    return names, {f.encode_name for f in info.fields if f.required}


@pytest.mark.parametrize(("struct", "schema"), PAIRS, ids=[s for _, s in PAIRS])
def test_each_model_has_the_fields_of_its_schema(struct: type[msgspec.Struct], schema: str) -> None:
    document = SCHEMAS[schema]
    names, required = _fields(struct)
    assert names == set(document["properties"]), f"{struct.__name__} vs {schema}"
    if schema.endswith("View"):  # an answer: what the server always sends, the client must require no more
        assert required <= set(document.get("required", [])), f"{struct.__name__} requires more than {schema}"


@pytest.mark.parametrize(("struct", "schema"), PAIRS, ids=[s for _, s in PAIRS])
def test_literal_types_list_the_schemas_values(struct: type[msgspec.Struct], schema: str) -> None:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    for field in info.fields:
        literal = field.type
        if isinstance(literal, msgspec.inspect.UnionType):
            literal = next((t for t in literal.types if isinstance(t, msgspec.inspect.LiteralType)), literal)
        if isinstance(literal, msgspec.inspect.LiteralType):
            prop = SCHEMAS[schema]["properties"][field.encode_name]
            options = prop.get("anyOf", [prop])
            values = next(o["enum"] for o in options if "enum" in o)
            assert set(literal.values) == set(values), f"{schema}.{field.encode_name}"


def test_every_error_code_has_its_class() -> None:
    codes = set(SCHEMAS["Error"]["properties"]["code"]["enum"])
    assert codes == set(errors.BY_CODE), "an error code of the contract without its exception class, or the reverse"
    for code, cls in errors.BY_CODE.items():
        assert cls.code == code and issubclass(cls, errors.SkiplockError)


def test_error_responses_become_their_classes() -> None:
    refusal = b'{"code": "queue_full", "error": "full"}'
    full = errors.error_for(429, refusal, {"Retry-After": "2", "X-Request-Id": "r1"})
    assert isinstance(full, errors.QueueFull) and full.retry_after == 2 and full.request_id == "r1"
    assert str(full) == "queue_full: full (request r1)"
    newer = errors.error_for(409, b'{"code": "some_new_conflict", "error": "?"}', {})
    assert isinstance(newer, errors.Conflict) and newer.error_code == "some_new_conflict"
    assert isinstance(errors.error_for(502, b"bad gateway", {}, "Bad Gateway"), errors.SkiplockError)
