"""The process's one LISTEN connection, shared by the long-poll wake-ups and the broadcasts.

Pool connections carry no session state (see `mq.db.engine`), so listening needs a connection of its own; one per
process is enough for every channel. It reconnects by itself: a query now and then finds a dead connection, and
after a reconnect every `on_reconnect` callback runs, since notifications may have been missed meanwhile. The same
connection sends the wake-ups' NOTIFY statements (`execute`), under `synchronous_commit = off`: a notification
needs no durability, so it need not wait for a WAL flush.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import asyncpg

from mq.db import sql
from mq.db.engine import asyncpg_dsn

log = logging.getLogger(__name__)

#: Called with the payload of each notification on its channel, on the event loop: it must be cheap.
Callback = Callable[[str], None]
_RECONNECT_SECONDS = 1.0
_HEALTH_CHECK_SECONDS = 5.0
_CONNECT_TIMEOUT_SECONDS = 10.0
_FAULTS = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)


class PostgresListener:
    def __init__(self, database_url: str) -> None:
        self._dsn = asyncpg_dsn(database_url)
        self._callbacks: dict[str, list[Callback]] = {}
        self._others_only: set[Callback] = set()
        self._reconnected: list[Callable[[], None]] = []
        self._conn: asyncpg.Connection[Any] | None = None
        self._lock = asyncio.Lock()  # one operation at a time on the connection
        self._task: asyncio.Task[None] | None = None
        self._check_now = asyncio.Event()  # a statement failed: look at the connection without waiting
        self.listening = asyncio.Event()  # set while connected and listening on every channel

    async def start(self) -> None:
        """Connect (raising if Postgres cannot be reached), then keep the connection alive in the background."""
        await self._connect()
        self._task = asyncio.create_task(self._keep_alive(), name="skiplock-listener")

    async def listen(self, channel: str, callback: Callback, *, others_only: bool = False) -> None:
        """Call `callback(payload)` for each notification on `channel`, from now on and across reconnects.
        `others_only`: not for the notifications this connection sent itself (`execute`), which the process
        acted on already."""
        first = channel not in self._callbacks
        self._callbacks.setdefault(channel, []).append(callback)
        if others_only:
            self._others_only.add(callback)
        if first and self._conn is not None:
            with contextlib.suppress(*_FAULTS):  # a broken connection listens again when it reconnects
                async with self._lock:
                    await self._conn.add_listener(channel, self._received)

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        self._reconnected.append(callback)

    async def execute(self, statement: str, *args: object) -> None:
        """Run a statement on the listening connection; raises ConnectionError while it is away."""
        async with self._lock:
            try:
                if self._conn is None or self._conn.is_closed():
                    raise ConnectionError("the listening connection is away")
                await self._conn.execute(statement, *args, timeout=_HEALTH_CHECK_SECONDS)
            except _FAULTS:
                self._check_now.set()
                raise

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.listening.clear()
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close(timeout=2)
            self._conn = None

    def _received(self, _conn: object, pid: int, channel: str, payload: object) -> None:
        own = self._conn is not None and pid == self._conn.get_server_pid()
        for callback in self._callbacks.get(channel, ()):
            if own and callback in self._others_only:
                continue
            try:
                callback(str(payload))
            except Exception:
                log.exception("notification handler for %s failed", channel)

    async def _connect(self) -> None:
        conn = await asyncpg.connect(self._dsn, timeout=_CONNECT_TIMEOUT_SECONDS)
        try:
            await conn.execute(sql.LISTENER_SESSION, timeout=_CONNECT_TIMEOUT_SECONDS)
            for channel in list(self._callbacks):
                await conn.add_listener(channel, self._received)
        except BaseException:
            conn.terminate()
            raise
        self._conn = conn
        self.listening.set()

    async def _keep_alive(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._check_now.wait(), _HEALTH_CHECK_SECONDS)
            self._check_now.clear()
            try:
                async with self._lock:
                    if self._conn is None or self._conn.is_closed():
                        raise ConnectionError("closed")
                    await self._conn.execute(sql.PING, timeout=_HEALTH_CHECK_SECONDS)
                continue
            except _FAULTS as exc:
                log.debug("listener: %s; reconnecting", exc)
            self.listening.clear()
            while True:
                async with self._lock:
                    if self._conn is not None:
                        self._conn.terminate()
                        self._conn = None
                    try:
                        await self._connect()
                    except _FAULTS as exc:
                        log.debug("listener: cannot reconnect (%s)", exc)
                if self._conn is not None:
                    break
                await asyncio.sleep(_RECONNECT_SECONDS)
            for callback in self._reconnected:
                try:
                    callback()
                except Exception:
                    log.exception("reconnect handler failed")
