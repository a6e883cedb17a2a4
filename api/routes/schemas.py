"""Topic schemas (contract, "Topic schemas"): versions per topic, readable by whoever may read the topic, written
by tenant admins."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, put
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_204_NO_CONTENT

from api.body import strict_body
from api.schemas import SchemaBody
from api.views.schemas import SchemaListView, SchemaView
from mq.commands.topic_data import SchemaCommands
from mq.tenancy.auth import Principal

AnyRequest = Request[Principal, Any, Any]


def _commands(request: AnyRequest) -> SchemaCommands:
    commands: SchemaCommands = request.app.state.runtime.commands.schemas
    return commands


class TopicSchemaController(Controller):
    path = "/api/topic-schemas"
    tags = ["topic schemas"]

    @get("/", summary="Every topic schema of the tenant (the version in force)", operation_id="listTopicSchemas")
    async def list_schemas(self, request: AnyRequest) -> SchemaListView:
        return SchemaListView.from_rows(await _commands(request).list(request.user))

    @get(
        "/{topic:str}", summary="A topic's schema: the version in force, or one version", operation_id="getTopicSchema"
    )
    async def get_schema(
        self,
        request: AnyRequest,
        topic: str,
        version: Annotated[int | None, Parameter(ge=1, le=2**31 - 1, description="An earlier version")] = None,
    ) -> SchemaView:
        return SchemaView.from_row(await _commands(request).get(request.user, topic, version))

    @put(
        "/{topic:str}",
        **strict_body(SchemaBody),
        status_code=HTTP_200_OK,
        summary="Replace a topic's schema (adds a version)",
        operation_id="putTopicSchema",
    )
    async def put_schema(self, request: AnyRequest, topic: str, data: SchemaBody) -> SchemaView:
        """Every enqueue into the topic (single, batch, replay, schedules) is then checked against this version, on
        every instance within a second. 400 `invalid_schema` for a schema that does not parse or compile; with
        `compatibility: backward`, 409 `incompatible_schema` when it would refuse messages the version in force
        accepts."""
        stored = await _commands(request).put(request.user, topic, data.schema_json, data.format, data.compatibility)
        return SchemaView.from_row(stored)

    @delete(
        "/{topic:str}",
        status_code=HTTP_204_NO_CONTENT,
        summary="Delete a topic's schema (every version)",
        operation_id="deleteTopicSchema",
    )
    async def delete_schema(self, request: AnyRequest, topic: str) -> None:
        await _commands(request).delete(request.user, topic)
