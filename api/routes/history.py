"""Message history: a replayable topic's message log, its trims and replays (contract, "Message history and
replay")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import Controller, Request, delete, get
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK

from api.body import json_post
from api.schemas import ReplayBody
from api.views.history import LogPageView, ReplayedView, TrimmedView
from mq.commands.topic_data import HistoryCommands
from mq.tenancy.auth import Principal

AnyRequest = Request[Principal, Any, Any]

#: The log's page size bounds (contract).
MAX_LOG_LIMIT = 1000


def _commands(request: AnyRequest) -> HistoryCommands:
    commands: HistoryCommands = request.app.state.runtime.commands.history
    return commands


class MessageLogController(Controller):
    path = "/api/topics/{topic:str}"
    tags = ["message history"]

    @get("/message-log", summary="A topic's message log, oldest first", operation_id="getMessageLog")
    async def page(
        self,
        request: AnyRequest,
        topic: str,
        from_time: Annotated[datetime | None, Parameter(description="Entries acked at or after (RFC 3339)")] = None,
        to_time: Annotated[datetime | None, Parameter(description="Entries acked before (RFC 3339)")] = None,
        key: str | None = None,
        limit: Annotated[int, Parameter(ge=1, le=MAX_LOG_LIMIT)] = 100,
        cursor: Annotated[str | None, Parameter(description="`next_cursor` of the previous page")] = None,
    ) -> LogPageView:
        """Every message acked while the topic was replayable, in `acked_at` order (keyset paging: acks that
        arrive meanwhile never shift a page), within its `replay_window_seconds` and after its last trim."""
        since, until = _aware(from_time), _aware(to_time)
        return LogPageView.of(await _commands(request).page(request.user, topic, since, until, key, limit, cursor))

    @delete(
        "/message-log",
        status_code=HTTP_200_OK,
        summary="Trim a topic's message log",
        operation_id="trimMessageLog",
    )
    async def trim(
        self,
        request: AnyRequest,
        topic: str,
        before: Annotated[datetime, Parameter(description="Entries acked before this go (RFC 3339)")],
    ) -> TrimmedView:
        """The entries go from every read and replay at once; their storage with their partition."""
        aware = _aware(before)
        assert aware is not None
        return TrimmedView(deleted=await _commands(request).trim(request.user, topic, aware))

    @json_post("/replay", ReplayBody, status_code=HTTP_200_OK, summary="Replay logged messages", operation_id="replay")
    async def replay(self, request: AnyRequest, topic: str, data: ReplayBody) -> ReplayedView:
        """Every logged message acked in [from_time, to_time) (with `key`, when given) is enqueued again as a new
        message, in `acked_at` order; with `consumer_group`, delivered to that group only (404 `not_found` when the
        topic has no such group). Refused midway (max_depth, a quota, a rate limit): 429 with `details:
        {replayed, resume_from}`; give `resume_from` as `from_time` to go on."""
        since, until = _aware(data.from_time), _aware(data.to_time)
        replayed = await _commands(request).replay(request.user, topic, since, until, data.key, data.consumer_group)
        return ReplayedView(replayed=replayed)


def _aware(value: datetime | None) -> datetime | None:
    """A time without a zone is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
