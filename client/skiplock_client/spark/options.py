"""The data source's options, read once on the driver into plain, picklable settings that tasks receive.

Credentials come from `username`/`password`, a `credentialsFile` (JSON `{"username": ..., "password": ...}`, read
where the job is planned), or the environment (`SKIPLOCK_USERNAME`, `SKIPLOCK_PASSWORD`); they are never logged, and
`repr` leaves them out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from skiplock_client import errors
from skiplock_client.client import DEFAULT_BATCH_SIZE, AsyncClient
from skiplock_client.models import MessageStatus


class OptionError(ValueError):
    """An option is missing or wrong; the message names it."""


def _int(options: Mapping[str, str], name: str, default: int, low: int = 1, high: int = 10**9) -> int:
    raw = options.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {name!r} must be a whole number, not {raw!r}") from None
    if not low <= value <= high:
        raise OptionError(f"option {name!r} must be between {low} and {high}, not {value}")
    return value


def _float(options: Mapping[str, str], name: str, default: float) -> float:
    raw = options.get(name)
    try:
        return float(raw) if raw is not None else default
    except ValueError:
        raise OptionError(f"option {name!r} must be a number, not {raw!r}") from None


@dataclass(frozen=True)
class Connection:
    url: str
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    tenant: str | None = None
    verify: bool | str = True
    timeout: float = 30.0

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Connection:
        url = options.get("url") or os.environ.get("SKIPLOCK_URL")
        if not url:
            raise OptionError("option 'url' is required (the Skiplock server, e.g. https://queue.example.com)")
        username, password = options.get("username"), options.get("password")
        if path := options.get("credentialsFile"):
            try:
                stored = json.loads(Path(path).read_text())
                username, password = stored["username"], stored["password"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise OptionError(
                    f"option 'credentialsFile': cannot read username and password from {path}: {type(exc).__name__}"
                ) from None
        username = username or os.environ.get("SKIPLOCK_USERNAME")
        password = password or os.environ.get("SKIPLOCK_PASSWORD")
        if bool(username) != bool(password):
            raise OptionError("give both 'username' and 'password' (or a 'credentialsFile'), or neither")
        verify: bool | str = options.get("caBundle") or options.get("verify", "true").lower() != "false"
        return cls(url, username, password, options.get("tenant"), verify, _float(options, "timeout", 30.0))

    @property
    def auth(self) -> tuple[str, str] | None:
        return (self.username, self.password) if self.username and self.password else None


@dataclass(frozen=True)
class WriteOptions:
    connection: Connection
    topic: str | None
    payload_column: str | None
    key_column: str | None
    topic_column: str | None
    metadata_column: str | None
    priority_column: str | None
    delay_column: str | None
    batch_size: int
    in_flight: int
    retry_budget_seconds: float
    on_invalid: Literal["fail", "reject"]
    reject_path: str | None
    reject_format: Literal["json", "parquet"]
    summary_path: str | None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> WriteOptions:
        on_invalid = options.get("onInvalid", "fail")
        if on_invalid not in ("fail", "reject"):
            raise OptionError(f"option 'onInvalid' is 'fail' or 'reject', not {on_invalid!r}")
        reject_format = options.get("rejectFormat", "json")
        if reject_format not in ("json", "parquet"):
            raise OptionError(f"option 'rejectFormat' is 'json' or 'parquet', not {reject_format!r}")
        if on_invalid == "reject" and not options.get("rejectPath"):
            raise OptionError("onInvalid=reject needs option 'rejectPath' (a folder for the rejected rows)")
        topic, topic_column = options.get("topic"), options.get("topicColumn")
        if not topic and not topic_column:
            raise OptionError("option 'topic' is required (or a 'topicColumn' naming each row's topic)")
        return cls(
            connection=Connection.from_options(options),
            topic=topic,
            payload_column=options.get("payloadColumn"),
            key_column=options.get("keyColumn"),
            topic_column=topic_column,
            metadata_column=options.get("metadataColumn"),
            priority_column=options.get("priorityColumn"),
            delay_column=options.get("delayColumn"),
            batch_size=_int(options, "batchSize", DEFAULT_BATCH_SIZE, high=DEFAULT_BATCH_SIZE * 100),
            in_flight=_int(options, "inFlight", 4, high=64),
            retry_budget_seconds=_float(options, "retryBudgetSeconds", 600.0),
            on_invalid=on_invalid,  # type: ignore[arg-type] # checked above
            reject_path=options.get("rejectPath"),
            reject_format=reject_format,  # type: ignore[arg-type] # checked above
            summary_path=options.get("summaryPath"),
        )


@dataclass(frozen=True)
class ReadOptions:
    connection: Connection
    topic: str | None
    status: MessageStatus | None
    key: str | None
    page_size: int
    push_filters: bool
    consumer_group: str | None = None
    #: Read the topic's message log instead of its messages.
    history: bool = False
    since: str | None = None
    until: str | None = None
    slices: int = 1

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ReadOptions:
        return cls(
            connection=Connection.from_options(options),
            topic=options.get("topic"),
            status=options.get("status"),  # type: ignore[arg-type] # the server checks it (400 otherwise)
            key=options.get("key"),
            page_size=_int(options, "pageSize", 200, high=200),
            push_filters=options.get("pushFilters", "false").lower() == "true",
            consumer_group=options.get("consumerGroup"),
            history=options.get("history", "false").lower() == "true",
            since=options.get("since"),
            until=options.get("until"),
            slices=_int(options, "slices", 4, high=1000),
        )


async def check_connection(connection: Connection) -> None:
    """The server answers and takes the credentials (a platform admin names a tenant): OptionError otherwise, before
    any data moves."""
    async with AsyncClient(
        connection.url, auth=connection.auth, tenant=connection.tenant, verify=connection.verify, timeout=10
    ) as client:
        try:
            me = await client.me()
        except errors.Unauthorized:
            raise OptionError(
                f"Skiplock at {connection.url} refused the credentials: check 'username' and 'password' "
                "(or 'credentialsFile', SKIPLOCK_USERNAME/SKIPLOCK_PASSWORD)"
            ) from None
        except errors.SkiplockError as exc:
            raise OptionError(f"Skiplock at {connection.url} cannot be used: {exc}") from None
    if me.role == "platform_admin" and not connection.tenant:
        raise OptionError(f"{me.username} is a platform admin: name the tenant to write to with the option 'tenant'")
