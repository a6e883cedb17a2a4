"""A minimal HTTP/1.1 keep-alive client for the benchmark: one connection, one request at a time.

General clients (httpx) spend more CPU per request than the server under test; on a 2-core machine that would
measure the client. This one writes a prebuilt request and reads a Content-Length framed response, nothing else.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any

import msgspec


class HttpConnection:
    def __init__(self, host: str, port: int, auth: tuple[str, str], headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._head = f"Host: {host}:{port}\r\nAuthorization: Basic {token}\r\n{extra}"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)

    async def _drain_refusal(self, status_line: bytes) -> None:
        """Read the rest of an idle connection's 408 (its headers and body) so that nothing of it is left."""
        if not status_line:
            return
        assert self._reader is not None
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            await asyncio.wait_for(self._reader.read(), 2)  # (the server closes it at once)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """`body` is sent as JSON; bytes are sent as they are (encode a static body once, outside the loop)."""
        assert self._reader is not None and self._writer is not None
        payload = body if isinstance(body, bytes) else (b"" if body is None else msgspec.json.encode(body))
        head = (
            f"{method} {path} HTTP/1.1\r\n{self._head}Content-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        self._writer.write(head.encode() + payload)
        status_line = await self._reader.readline()
        # the server closed an idle keep-alive connection (after 10 s idle it answers 408 first, then closes: the
        # answer is the connection's, not this request's): reconnect and send again
        if not status_line or status_line.split(b" ", 2)[1:2] == [b"408"]:
            await self._drain_refusal(status_line)
            await self.close()
            await self.connect()
            assert self._reader is not None and self._writer is not None
            self._writer.write(head.encode() + payload)
            status_line = await self._reader.readline()
        status = int(status_line.split(b" ", 2)[1])
        length = 0
        while True:
            line = await self._reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        data = await self._reader.readexactly(length) if length else b""
        return status, (msgspec.json.decode(data) if data else None)
