"""`skiplock serve` as `make run` starts it: embedded servers, data that survives a restart, nothing left behind."""

from __future__ import annotations

import base64
import contextlib
import signal

import httpx
import psutil

from tests.support.servers import ADMIN, scratch_dir, start_server

TENANT = {"X-Tenant": "default"}


def _children_alive(pids: list[int]) -> list[int]:
    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_embedded_run_keeps_messages_across_restart_and_stops_cleanly() -> None:
    data_dir = scratch_dir() / "data"
    server = start_server({}, data_dir=data_dir)
    children = [c.pid for c in psutil.Process(server.process.pid).children(recursive=True)]
    assert len(children) >= 2, "embedded Postgres and Redis should run as children"
    with httpx.Client(base_url=server.base_url, auth=ADMIN, headers=TENANT) as c:
        r = c.post("/api/messages", json={"topic": "durable", "payload": base64.b64encode(b"survive").decode()})
        assert r.status_code == 201, r.text
        mid = r.json()["id"]
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(60) == 0, server.log()
    assert _children_alive(children) == [], "embedded servers left running after SIGTERM"

    again = start_server({}, data_dir=data_dir)
    try:
        with httpx.Client(base_url=again.base_url, auth=ADMIN, headers=TENANT) as c:
            r = c.post("/api/messages/dequeue", json={"topic": "durable"})
            assert [m["id"] for m in r.json()["messages"]] == [mid]
            assert base64.b64decode(r.json()["messages"][0]["payload"]) == b"survive"
    finally:
        again.process.send_signal(signal.SIGTERM)
        again.process.wait(60)


def test_kill_9_leaves_no_embedded_server_running() -> None:
    server = start_server({}, data_dir=scratch_dir() / "data")
    children = [c.pid for c in psutil.Process(server.process.pid).children(recursive=True)]
    server.process.kill()
    server.process.wait(10)
    for pid in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).wait(30)
    assert _children_alive(children) == []
