"""Kept-alive connections against a real server. A server that closes an idle connection just as a client reuses it
resets that request (k6 saw it once in CI with uvicorn's 5 s default); the server must keep idle connections
longer than clients keep theirs, so the client is the one that closes."""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

from tests.support.servers import Server


def test_an_idle_kept_alive_connection_still_serves_after_uvicorns_default(server: Server) -> None:
    url = urlsplit(server.base_url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        first = conn.getresponse()
        first.read()
        assert first.status == 200
        socket_before = conn.sock
        time.sleep(6)  # past uvicorn's default keep-alive of 5 s
        conn.request("GET", "/healthz")  # on the same socket: http.client reconnects only when it has none
        assert conn.sock is socket_before
        second = conn.getresponse()
        second.read()
        assert second.status == 200
    finally:
        conn.close()
