"""One schema-check process (`mq.schemas.sandbox`) seen from the API: frames written to its stdin, replies read from
its stdout by the event loop's own pipe protocol (no task, no stream per request), and a time budget per request.

A reply's header carries the process's CPU time when it sent it; between requests the process waits on its stdin,
so the CPU it used since its last reply is what the request in hand costs. The budget timer looks at that only when
it fires (the process's CPU from /proc), never per request: a request that waited for a core on a busy machine is
not charged for the wait, and one that outlives `WALL_FACTOR` times the budget in wall time is stopped all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
import sys
from typing import cast

import msgspec

from mq.schemas.wire import Reply, Request

log = logging.getLogger(__name__)

#: A request may take this many times its budget in wall time (waiting for a core) before it is stopped all the same.
WALL_FACTOR = 20
#: A frame: its length, then (replies only) the process's CPU seconds when it sent it.
REQUEST_HEADER = struct.Struct(">I")
REPLY_HEADER = struct.Struct(">Id")

_ENCODE = msgspec.msgpack.Encoder().encode
_REPLIES: msgspec.msgpack.Decoder[Reply] = msgspec.msgpack.Decoder(Reply)
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class TooCostly(Exception):
    """A request ran over its budget, or its process died on it; the process is gone."""


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of a process so far, or None where /proc does not tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


class SandboxProcess(asyncio.SubprocessProtocol):
    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._buffer = bytearray()
        self._ready: asyncio.Future[None] = self._loop.create_future()
        self._waiter: asyncio.Future[Reply] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._transport: asyncio.SubprocessTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._cpu = 0.0  # the process's CPU seconds at its last reply
        self._asked = 0.0  # when the request in hand was sent (the loop's clock)
        self._budget = 0.0
        self.pid = 0
        self.alive = True
        #: the schema keys this process has been told (`mq.schemas.checks`)
        self.known: set[int] = set()

    @classmethod
    async def start(cls) -> SandboxProcess:
        process = cls()
        transport, _ = await process._loop.subprocess_exec(
            lambda: process,
            sys.executable,
            "-m",
            "mq.schemas.sandbox",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=None,
        )
        process._transport = transport
        process.pid = transport.get_pid()
        # (uvloop's pipe transports are not asyncio.WriteTransport subclasses; they write all the same)
        process._stdin = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
        try:
            await process._ready  # its first, empty reply: the imports are done
        except BaseException:
            process.kill()
            raise
        return process

    def ask(self, request: Request, budget: float) -> asyncio.Future[Reply]:
        """Send one request; its reply, or TooCostly when it ran over `budget` seconds of the process's CPU."""
        assert self._waiter is None, "one request at a time"
        assert self._stdin is not None
        data = _ENCODE(request)
        self._stdin.write(REQUEST_HEADER.pack(len(data)) + data)
        self._waiter = waiter = self._loop.create_future()
        self._asked, self._budget = self._loop.time(), budget
        self._timer = self._loop.call_later(budget, self._over_budget)
        return waiter

    def _over_budget(self) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        used = cpu_seconds(self.pid)
        spent = self._budget if used is None else used - self._cpu
        if spent >= self._budget or self._loop.time() - self._asked >= self._budget * WALL_FACTOR:
            self._fail(TooCostly())
            return
        self._timer = self._loop.call_later(max(self._budget - spent, 0.005), self._over_budget)

    def _fail(self, exc: BaseException) -> None:
        self.kill()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    # --- the pipe protocol ------------------------------------------------------------------------------------

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= REPLY_HEADER.size:
            size, cpu = REPLY_HEADER.unpack_from(self._buffer)
            end = REPLY_HEADER.size + size
            if len(self._buffer) < end:
                return
            frame = bytes(self._buffer[REPLY_HEADER.size : end])
            del self._buffer[:end]
            self._cpu = cpu
            self._received(frame)

    def _received(self, frame: bytes) -> None:
        if not self._ready.done():
            self._ready.set_result(None)
            return
        waiter, self._waiter = self._waiter, None
        if self._timer is not None:
            self._timer.cancel()
        if waiter is not None and not waiter.done():
            waiter.set_result(_REPLIES.decode(frame))

    def process_exited(self) -> None:
        self.alive = False
        if not self._ready.done():
            self._ready.set_exception(OSError("the schema-check process exited as it started"))
        if self._waiter is not None:
            log.warning("a schema-check process exited during a check")
            self._fail(TooCostly())

    def kill(self) -> None:
        self.alive = False
        if self._timer is not None:
            self._timer.cancel()
        if self._transport is not None:
            with contextlib.suppress(ProcessLookupError):
                self._transport.kill()

    def close(self) -> None:
        self.kill()
        if self._transport is not None:
            self._transport.close()
