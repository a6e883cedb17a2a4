"""Hostile HTTP against a real server: oversized headers and bodies, a request trickled in byte by byte, 10,000
idle connections, 2,000 concurrent long polls. Memory (RSS) and the server's open connections are measured and
must stay bounded; other clients keep being served throughout. Figures are printed for docs/reliability.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psutil
import pytest

from api.http_protocol import HEADER_TIMEOUT_SECONDS
from tests.drills.harness import report, seconds
from tests.integration.helpers import b64
from tests.support.servers import ADMIN, Server, start_server, stop_server
from tests.support.tenants import Tenant

pytestmark = pytest.mark.drill

#: How long a bystander's enqueue and dequeue may take while an attack goes on. Unhindered they take a fraction of
#: a second (docs/reliability.md); 2 s leaves a busy shared runner its noise, and is still well under what waiting
#: behind the attack would cost: the trickle lasts 6 s (60 s in the long version), an idle connection is held 10 s.
BYSTANDER_SECONDS = 2.0
#: How long the idle-connections drill watches for its peak: the server closes them HEADER_TIMEOUT_SECONDS after they
#: open, and the last reading (a few tenths of a second with 10,000 sockets) must come before.
IDLE_PEAK_WINDOW_SECONDS = HEADER_TIMEOUT_SECONDS - 2


@pytest.fixture
async def hostile_server(server_env: dict[str, str]) -> AsyncIterator[Server]:
    server = await asyncio.to_thread(start_server, server_env)
    yield server
    stop_server(server)


def _rss_mib(server: Server) -> float:
    return psutil.Process(server.process.pid).memory_info().rss / 2**20


def _connections(server: Server) -> int:
    return len(psutil.Process(server.process.pid).net_connections(kind="tcp"))


async def _served(server: Server, tenant: Tenant) -> float:
    """A normal client's enqueue and dequeue, as they are answered now: seconds taken (must succeed)."""
    started = time.monotonic()
    async with httpx.AsyncClient(
        base_url=server.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=15
    ) as c:
        r = await c.post("/api/messages", json={"topic": "bystander", "payload": b64("still here")})
        assert r.status_code == 201, r.text
        r = await c.post("/api/messages/dequeue", json={"topic": "bystander"})
        assert r.status_code == 200 and r.json()["messages"], r.text
    return round(time.monotonic() - started, 3)


async def _raw(server: Server, data: bytes, read_timeout: float = 10) -> bytes:
    host, port = server.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(65536), read_timeout)
    except (ConnectionError, TimeoutError):
        return b""
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def test_oversized_headers_bodies_and_broken_input(hostile_server: Server, tenant: Tenant) -> None:
    server = hostile_server
    before = _rss_mib(server)
    huge_header = b"GET /api/topics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 2_000_000 + b"\r\n\r\n"
    answered = await _raw(server, huge_header)
    header_status = answered.split(b"\r\n", 1)[0].decode(errors="replace")
    many = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % n for n in range(20000)) + b"\r\n"
    many_status = (await _raw(server, many)).split(b"\r\n", 1)[0].decode(errors="replace")
    headers = {"X-Tenant": tenant.slug, "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers=headers, timeout=60) as c:
        big = await c.post("/api/messages", content=b'{"topic": "t", "payload": "' + b"A" * (40 * 2**20) + b'"}')
        assert big.status_code == 413 and big.json()["code"] == "payload_too_large", big.text[:200]
        for body in (b"{", b'{"topic": "t", "payload": "\xff\xfe"}', b"\xff" * 100, b'{"topic": 1e999}', b"[" * 100000):
            r = await c.post("/api/messages", content=body)
            assert r.status_code == 400 and r.json()["code"] == "invalid_request", (body[:20], r.text[:200])
            r = await c.post("/api/messages/batch", content=body)
            assert r.status_code == 400 and r.json()["code"] == "invalid_request", (body[:20], r.text[:200])
    served = await _served(server, tenant)
    after = _rss_mib(server)
    figures = {
        "2_MB_header": header_status,
        "20000_headers": many_status,
        "40_MiB_body": big.status_code,
        "rss_mib_before": round(before, 1),
        "rss_mib_after": round(after, 1),
        "bystander_seconds": served,
    }
    report("oversized and broken input", figures)
    assert header_status.startswith("HTTP/1.1 431") and many_status.startswith("HTTP/1.1 431"), figures
    assert after - before < 200, figures


async def test_a_trickled_request_does_not_stop_anyone_else(hostile_server: Server, tenant: Tenant) -> None:
    server = hostile_server
    host, port = server.base_url.removeprefix("http://").split(":")
    body = b'{"topic": "trickle", "payload": "' + b64("slow").encode() + b'"}'
    token = httpx.BasicAuth(*ADMIN)._auth_header
    head = (
        f"POST /api/messages HTTP/1.1\r\nHost: {host}\r\nAuthorization: {token}\r\nX-Tenant: {tenant.slug}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    request = head + body
    duration = seconds(6, 60)
    reader, writer = await asyncio.open_connection(host, int(port))

    async def answer_head() -> bytes:
        """The answer's head, read as it comes: a 408 arrives (and the connection closes) while we still write."""
        data = b""
        with contextlib.suppress(ConnectionError):
            while b"\r\n\r\n" not in data and (chunk := await reader.read(65536)):
                data += chunk
        return data

    reading = asyncio.ensure_future(answer_head())
    started = time.monotonic()
    served = []
    try:
        for n, byte in enumerate(request):
            try:
                writer.write(bytes([byte]))
                await writer.drain()
            except ConnectionError:  # answered (408) and closed while we were still trickling
                break
            await asyncio.sleep(duration / len(request))
            if n % 50 == 0:
                served.append(await _served(server, tenant))
        answer = await asyncio.wait_for(reading, 40)
    finally:
        reading.cancel()
        writer.close()
    status = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    figures = {
        "trickled_seconds": round(time.monotonic() - started, 1),
        "answer": status,
        "bystander_requests": len(served),
        "bystander_seconds_max": max(served),
    }
    report("trickled request", figures)
    assert max(served) < BYSTANDER_SECONDS, figures
    # One answer is right for each version. The head is most of the request: trickled over 60 s it is still
    # arriving at the header deadline, which cuts it off (408); over 6 s it arrives in time, and the whole request
    # well within the request deadline (30 s), so it is served (201). The deadline's 503 for a slow body would need
    # a body trickled for 30 s after a timely head, which neither version sends.
    head_trickle_seconds = duration * len(head) / len(request)
    expected = "HTTP/1.1 408" if head_trickle_seconds > HEADER_TIMEOUT_SECONDS else "HTTP/1.1 201"
    assert status.startswith(expected), figures


async def test_ten_thousand_idle_connections(hostile_server: Server, tenant: Tenant) -> None:
    server = hostile_server
    host, port = server.base_url.removeprefix("http://").split(":")
    count = 10_000
    before_rss, before_connections = _rss_mib(server), _connections(server)
    sockets: list[socket.socket] = []
    try:
        opened = time.monotonic()
        for _ in range(count):
            s = socket.socket()
            s.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                s.connect((host, int(port)))
            sockets.append(s)
        # The server takes them from the kernel's accept queue as its loop turns: watch until it holds them all.
        peak_connections = before_connections
        while peak_connections - before_connections < count and time.monotonic() - opened < IDLE_PEAK_WINDOW_SECONDS:
            await asyncio.sleep(0.25)
            peak_connections = max(peak_connections, _connections(server))
        peak_seconds, peak_rss = round(time.monotonic() - opened, 1), _rss_mib(server)
        served = await _served(server, tenant)
        await asyncio.sleep(12)  # connections that send no request within 10 s are closed
        later_connections = _connections(server)
    finally:
        for s in sockets:
            s.close()
    figures = {
        "idle_connections_opened": count,
        "server_connections_before": before_connections,
        "server_connections_peak": peak_connections,
        "peak_seconds": peak_seconds,
        "server_connections_later": later_connections,
        "rss_mib_before": round(before_rss, 1),
        "rss_mib_peak": round(peak_rss, 1),
        "bystander_seconds": served,
    }
    report("10,000 idle connections", figures)
    # The server held them (nearly) all at once: one that accepted only a few would pass every bound below. Both
    # versions open 10,000 (the drill's length changes only the trickle), so both must pass 9,000 of them.
    assert peak_connections - before_connections > 0.9 * count, figures
    assert peak_rss - before_rss < 400, figures
    assert served < BYSTANDER_SECONDS, figures
    assert later_connections < 100, figures


async def test_two_thousand_concurrent_long_polls(hostile_server: Server, tenant: Tenant) -> None:
    server = hostile_server
    before_rss = _rss_mib(server)
    limits = httpx.Limits(max_connections=2100, max_keepalive_connections=0)
    headers = {"X-Tenant": tenant.slug}
    async with httpx.AsyncClient(base_url=server.base_url, auth=ADMIN, headers=headers, timeout=60, limits=limits) as c:
        warm = await c.get("/api/auth/me")  # one credential check, then cached
        assert warm.status_code == 200
        polls = [
            asyncio.create_task(c.post("/api/messages/dequeue", json={"topic": "crowd", "wait_seconds": 8}))
            for _ in range(2000)
        ]
        await asyncio.sleep(3)
        peak_rss, peak_connections = _rss_mib(server), _connections(server)
        served = await _served(server, tenant)
        for n in range(10):
            r = await c.post("/api/messages", json={"topic": "crowd", "payload": b64(f"m{n}")})
            assert r.status_code == 201
        answers = await asyncio.gather(*polls, return_exceptions=True)
    errors = [a for a in answers if not isinstance(a, httpx.Response)]
    statuses = sorted({a.status_code for a in answers if isinstance(a, httpx.Response)})
    delivered = sum(
        len(a.json()["messages"]) for a in answers if isinstance(a, httpx.Response) and a.status_code == 200
    )
    figures: dict[str, Any] = {
        "long_polls": 2000,
        "statuses": statuses,
        "client_errors": len(errors),
        "messages_delivered": delivered,
        "rss_mib_before": round(before_rss, 1),
        "rss_mib_peak": round(peak_rss, 1),
        "server_connections_peak": peak_connections,
        "bystander_seconds": served,
    }
    report("2,000 concurrent long polls", figures)
    assert errors == [] and statuses == [200], figures
    assert delivered == 10, figures  # each message to exactly one poll
    assert peak_rss - before_rss < 400, figures
