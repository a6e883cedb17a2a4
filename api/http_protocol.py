"""Uvicorn's httptools protocol with the limits a public server needs and uvicorn does not set:

- request headers (request line included) of at most `MAX_HEADER_BYTES`; more answers 431 and closes;
- headers complete within `HEADER_TIMEOUT_SECONDS` of the connection opening (or of a kept-alive request's first
  byte); a connection that sends nothing, or trickles its headers, answers 408 and is closed. Without this an idle
  TCP connection stays open forever (measured: 10,000 of them all stayed, tests/drills/test_hostile_http.py);
- malformed requests answer 400 in the contract's error shape rather than uvicorn's plain text.

A refusal of a request still arriving (431, 400) closes lingeringly (as nginx's `lingering_close`): the answer,
then our half of the connection, then whatever the client still sends is read and dropped for `LINGER_SECONDS` (at
most `LINGER_MAX_BYTES`) before the socket closes. Closing at once with unread input makes the kernel reset the
connection, and a client still writing its 2 MB of headers then never reads the 431 it was sent. A 408 (an idle or
trickling connection) closes at once.

A slow body is the request deadline's business (`api.deadline`).

A response goes out in one write where uvicorn makes two (its head, then its body): `_OneWrite` holds the head
until the body follows. Each write to a socket is a system call that, on a local connection, also runs the
receiving side's TCP work; on small answers that was about a tenth of the server's CPU.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEADER_BYTES = 64 * 1024
HEADER_TIMEOUT_SECONDS = 10.0
LINGER_SECONDS = 2.0
LINGER_MAX_BYTES = 8 * 2**20

_REASONS = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


class GuardedHttpProtocol(HttpToolsProtocol):
    _header_bytes = 0  # exact: request line and header fields of the request being read
    _raw_bytes = 0  # everything received since the request began, while its headers are incomplete
    _in_headers = True
    _header_timer: asyncio.TimerHandle | None = None
    _lingering = -1  # bytes dropped since a refusal; -1 while not refused
    _linger_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering >= 0:
            self._lingering += len(data)
            if self._lingering > LINGER_MAX_BYTES:
                self.transport.abort()
            return
        if self._in_headers:
            self._raw_bytes += len(data)
        super().data_received(data)
        if self._in_headers and self._raw_bytes > MAX_HEADER_BYTES:
            self._refuse(431, "request headers are larger than 64 KiB")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._in_headers:  # the next request on a kept-alive connection
            self._start_headers()

    def on_url(self, url: bytes) -> None:
        self._header_bytes += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value) + 4
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._stop_timer()
        if self._header_bytes > MAX_HEADER_BYTES:
            self._refuse(431, "request headers are larger than 64 KiB")
            return
        cycle = self.cycle
        super().on_headers_complete()
        if self.cycle is not cycle and self.cycle is not None:  # a request to answer (not an upgrade)
            self.cycle.transport = _OneWrite(self.transport)  # type: ignore[assignment]

    def on_response_complete(self) -> None:
        transport = getattr(self.cycle, "transport", None)
        if isinstance(transport, _OneWrite):  # a head without a body (HEAD) goes now
            transport.flush()
        super().on_response_complete()

    def send_400_response(self, msg: str) -> None:
        self._refuse(400, "malformed HTTP request")

    def _start_headers(self) -> None:
        self._in_headers, self._header_bytes, self._raw_bytes = True, 0, 0
        self._stop_timer()
        self._header_timer = self.loop.call_later(HEADER_TIMEOUT_SECONDS, self._headers_too_slow)

    def _stop_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self._in_headers and not self.transport.is_closing():
            # Idle or trickling: nothing large is in flight, so no lingering (10,000 idle connections go at once).
            self._refuse(408, f"request headers did not arrive within {HEADER_TIMEOUT_SECONDS:g} s", linger=False)

    def _refuse(self, status: int, message: str, *, linger: bool = True) -> None:
        """Answer in the contract's error shape and close; nothing of the request reaches the app."""
        self._stop_timer()
        self._in_headers = False
        if self.transport.is_closing() or self._lingering >= 0:
            return
        body = json.dumps({"code": "invalid_request", "error": message}).encode()
        head = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
        self.transport.write(head % (status, _REASONS[status], len(body)) + body)
        if not linger or not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self._lingering = 0
        self._linger_timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)


class _OneWrite:
    """The transport as one response's cycle sees it: the response head is held until the first body write (or
    the response's end, or a close) and sent with it in one write. Everything else passes through."""

    __slots__ = ("_held", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        if self._held is not None:
            data, self._held = self._held + data, None
        elif data.startswith(b"HTTP/") and not data.startswith(b"HTTP/1.1 100 "):  # the head (not a 100 Continue)
            self._held = data
            return
        self._transport.write(data)

    def flush(self) -> None:
        if self._held is not None:
            data, self._held = self._held, None
            self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
