"""The client's topic schemas: the calls, the errors as classes, and a typed producer that registers its model's
JSON Schema."""

from __future__ import annotations

import msgspec
import pytest
from skiplock_client import (
    AsyncClient,
    Client,
    IncompatibleSchema,
    InvalidSchema,
    NotFound,
    SchemaViolation,
    errors,
)

from tests.support.servers import ADMIN, Server
from tests.support.tenants import Tenant


class Order(msgspec.Struct):
    order_id: str
    amount: float
    note: str | None = None


class OrderV2(msgspec.Struct):
    """Order with `amount` no longer required: every Order still fits."""

    order_id: str
    amount: float = 0.0
    note: str | None = None


async def test_schema_calls_and_their_errors(server: Server, tenant: Tenant) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        avro = {"type": "record", "name": "Ping", "fields": [{"name": "n", "type": "int"}]}
        first = await sk.set_topic_schema("pings", avro)
        assert (first.format, first.version, first.schema()) == ("avro", 1, avro)
        await sk.send("pings", {"n": 1})
        with pytest.raises(SchemaViolation) as refused:
            await sk.send("pings", {"n": "one"})
        assert refused.value.details["pointer"] == "/n"
        with pytest.raises(SchemaViolation) as batch:
            await sk.send_batch("pings", [{"n": 1}, {"n": "x"}])
        assert [d["index"] for d in batch.value.details] == [1]
        with pytest.raises(InvalidSchema):
            await sk.set_topic_schema("pings", {"type": "record", "name": "P"})
        more = {**avro, "fields": [*avro["fields"], {"name": "m", "type": "int"}]}
        with pytest.raises(IncompatibleSchema):
            await sk.set_topic_schema("pings", more, compatibility="backward")
        assert [(s.topic, s.version) for s in await sk.topic_schemas()] == [("pings", 1)]
        await sk.delete_topic_schema("pings")
        with pytest.raises(NotFound):
            await sk.topic_schema("pings")
    with Client(server.base_url, auth=ADMIN, tenant=tenant.slug) as sync:
        assert sync.set_topic_schema("sync-pings", {"type": "object"}, format="json_schema").version == 1
        assert sync.topic_schema("sync-pings", version=1).format == "json_schema"


async def test_a_typed_producer_registers_its_models_schema_and_sends_instances(server: Server, tenant: Tenant) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        orders = sk.producer("typed-orders", Order)
        registered = await orders.register()
        assert registered.version == 1 and registered.format == "json_schema"
        assert (await orders.register()).version == 1  # the same schema: no new version
        await orders.send(Order("o1", 9.5))
        await orders.send_batch([Order("o2", 1.0, note="gift"), Order("o3", 2.0)])
        with pytest.raises(SchemaViolation):  # another producer is held to the model's shape
            await sk.send("typed-orders", {"order_id": 7})
        v2 = await sk.producer("typed-orders", OrderV2).register()  # relaxes (a renamed model's $defs too)
        assert v2.version == 2
        got = await sk.receive("typed-orders", 10)
        assert [m.decode(Order).order_id for m in got] == ["o1", "o2", "o3"]


async def test_schedule_calls(server: Server, tenant: Tenant) -> None:
    async with AsyncClient(server.base_url, auth=ADMIN, tenant=tenant.slug) as sk:
        made = await sk.set_schedule(
            "report", "reports", "0 7 * * 1-5", {"kind": "daily"}, timezone="Europe/Paris", priority=2
        )
        assert (made.topic, made.cron, made.timezone, made.priority, made.enabled) == (
            "reports",
            "0 7 * * 1-5",
            "Europe/Paris",
            2,
            True,
        )
        assert msgspec.json.decode(made.payload) == {"kind": "daily"} and made.last_run_at is None
        assert [s.name for s in await sk.schedules()] == ["report"]
        assert (await sk.schedule("report")).next_run_at == made.next_run_at
        with pytest.raises(errors.InvalidRequest):
            await sk.set_schedule("report", "reports", "0 7 * *", "x")
        ran = await sk.run_schedule("report")  # its message once, now; the schedule as it was
        [message] = await sk.receive("reports", 10)
        assert message.id == ran and message.metadata["skiplock_run"] == "manual"
        assert (await sk.schedule("report")).next_run_at == made.next_run_at
        await sk.delete_schedule("report")
        with pytest.raises(NotFound):
            await sk.schedule("report")
    with Client(server.base_url, auth=ADMIN, tenant=tenant.slug) as sync:
        assert sync.set_schedule("sync", "reports", "*/10 * * * * *", b"x", enabled=False).enabled is False
