"""The application's commands: what a caller asks, checked once and carried out.

Each command takes the caller's `Principal` and does everything the request needs besides its wire format: the
caller's role and grants (the consumer groups its grants pin included), the request's bounds, then the services.
The edges (the REST routes, the hot routes, queue-ti's gRPC service) decode, call one command, and render its answer:
a rule changed here holds on every edge.
"""

from __future__ import annotations

from dataclasses import dataclass

from mq.commands.messages import MessageCommands
from mq.commands.platform import PlatformCommands
from mq.commands.story import StoryCommands
from mq.commands.tenancy import AccountCommands, TenantCommands, UserCommands
from mq.commands.topic_data import HistoryCommands, ScheduleCommands, SchemaCommands
from mq.commands.topics import TopicCommands


@dataclass(frozen=True, slots=True)
class Commands:
    """The commands a process answers callers with (`runtime.commands`)."""

    messages: MessageCommands
    topics: TopicCommands
    schedules: ScheduleCommands
    schemas: SchemaCommands
    history: HistoryCommands
    tenants: TenantCommands
    users: UserCommands
    account: AccountCommands
    platform: PlatformCommands
    stories: StoryCommands
