"""The hot routes' lean path (`api.hot_routes`) answers exactly as the framework does: the same requests, valid and
not, go to a server with it (the default) and to one with `SKIPLOCK_HOT_ROUTES=false`, each on a tenant of its own,
and the answers are compared: status, every header but Date, and the body (errors to the byte; successes by their
shape, since ids and receipts differ)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import pytest

from tests.integration.helpers import b64, metric
from tests.support.servers import ADMIN, Server, start_server, stop_server
from tests.support.tenants import Tenant

LIMIT = 4096  # SKIPLOCK_MAX_REQUEST_BODY_BYTES of both servers, for the 413 cases


@pytest.fixture(scope="module")
def servers(server_env: dict[str, str]) -> Iterator[tuple[Server, Server]]:
    env = {**server_env, "SKIPLOCK_MAX_REQUEST_BODY_BYTES": str(LIMIT), "SKIPLOCK_GRPC_PORT": "0"}
    hot = start_server(env)
    try:
        framework = start_server({**env, "SKIPLOCK_HOT_ROUTES": "false"})
    except BaseException:
        stop_server(hot)
        raise
    yield hot, framework
    stop_server(hot)
    stop_server(framework)


async def _tenant(db: asyncpg.Pool[Any]) -> Tenant:
    slug = f"hot-{uuid.uuid4().hex[:12]}"
    return Tenant(await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", slug), slug)


def _shape(value: Any) -> Any:
    """A success body with its volatile values (ids, receipts, times) replaced by their type."""
    if isinstance(value, dict):
        volatile = {"id", "receipt", "visibility_deadline"}
        return {
            k: len(v) if k == "ids" else type(v).__name__ if k in volatile or k.endswith("_at") else _shape(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


def _headers(answer: httpx.Response, volatile: set[str]) -> list[tuple[str, str]]:
    """The answer's headers but `volatile`; a 405's `Allow` as a set (the framework lists the methods in an order
    that varies from process to process)."""
    return [
        (name, ", ".join(sorted(value.split(", "))) if name == "allow" else value)
        for name, value in answer.headers.multi_items()
        if name not in volatile
    ]


class Pair:
    """The same request to both servers, as the platform admin on each server's own tenant (unless told)."""

    def __init__(self, hot: httpx.AsyncClient, framework: httpx.AsyncClient, tenants: tuple[Tenant, Tenant]) -> None:
        self.clients = (hot, framework)
        self.tenants = tenants

    async def send(
        self,
        path: str | tuple[str, str],
        body: bytes | None = None,
        *,
        json: Any = None,
        each: tuple[Any, Any] | None = None,
        headers: dict[str, str] | None = None,
        auth: Any = ADMIN,
        method: str = "POST",
    ) -> tuple[httpx.Response, httpx.Response]:
        answers = []
        for n, client in enumerate(self.clients):
            sent = {"X-Tenant": self.tenants[n].slug, "X-Request-ID": "same-id", **(headers or {})}
            url = path if isinstance(path, str) else path[n]
            payload = json if each is None else each[n]  # `each`: a JSON body per side
            answers.append(await client.request(method, url, content=body, json=payload, headers=sent, auth=auth))
        return answers[0], answers[1]

    async def same(
        self, path: str | tuple[str, str], body: bytes | None = None, **options: Any
    ) -> tuple[httpx.Response, httpx.Response]:
        """Both answers alike (the hot path's, the framework's)."""
        hot, framework = await self.send(path, body, **options)
        assert hot.status_code == framework.status_code, (hot.text, framework.text)
        volatile = {"date"} if hot.status_code >= 400 else {"date", "content-length"}
        assert _headers(hot, volatile) == _headers(framework, volatile), (hot.headers, framework.headers, hot.text)
        if hot.status_code >= 400:
            assert hot.content == framework.content
        elif hot.content or framework.content:
            assert _shape(hot.json()) == _shape(framework.json()), (hot.text, framework.text)
        return hot, framework


@pytest.fixture
async def pair(servers: tuple[Server, Server], db: asyncpg.Pool[Any]) -> Any:
    hot, framework = servers
    async with (
        httpx.AsyncClient(base_url=hot.base_url, timeout=30) as a,
        httpx.AsyncClient(base_url=framework.base_url, timeout=30) as b,
    ):
        yield Pair(a, b, (await _tenant(db), await _tenant(db)))


async def test_successes_answer_alike(pair: Pair) -> None:
    one = {"topic": "orders", "payload": b64("x"), "metadata": {"k": "v"}, "priority": 2}
    assert (await pair.same("/api/messages", json=one))[0].status_code == 201
    batch = {"topic": "orders", "messages": [{"payload": b64(f"m{i}")} for i in range(3)]}
    assert (await pair.same("/api/messages/batch", json=batch))[0].status_code == 201
    answers = await pair.same("/api/messages/dequeue", json={"topic": "orders", "count": 2})
    leased = [a.json()["messages"] for a in answers]
    assert [len(m) for m in leased] == [2, 2]

    # A single ack: 204 without a body on both (each side acks its own message).
    paths = (f"/api/messages/{leased[0][0]['id']}/ack", f"/api/messages/{leased[1][0]['id']}/ack")
    acked = await pair.same(paths, each=({"receipt": leased[0][0]["receipt"]}, {"receipt": leased[1][0]["receipt"]}))
    assert [a.status_code for a in acked] == [204, 204]
    assert acked[0].content == acked[1].content == b""

    # A batch ack with one good and one stale receipt: the same report.
    bodies = [
        {"acks": [{"id": m[1]["id"], "receipt": m[1]["receipt"]}, {"id": m[0]["id"], "receipt": "x"}]} for m in leased
    ]
    reports = await pair.same("/api/messages/ack", each=(bodies[0], bodies[1]))
    assert reports[0].json()["acked"] == reports[1].json()["acked"] == 1

    # A long poll that waits and then answers empty.
    polls = await pair.same("/api/messages/dequeue", json={"topic": "empty", "wait_seconds": 0.2})
    assert polls[0].json() == {"messages": []}


@pytest.mark.parametrize(
    ("path", "body", "headers"),
    [
        ("/api/messages", b"{not json", None),
        ("/api/messages", b'{"topic": "t"}', None),  # no payload
        ("/api/messages", b'{"topic": "t", "payload": 3}', None),  # strict types
        ("/api/messages", b'{"topic": "t", "payload": "eA==", "extra": 1}', None),  # unknown field
        ("/api/messages", b'{"topic": "_system", "payload": "eA=="}', None),  # reserved topic
        ("/api/messages", b'{"topic": "t", "payload": "not base64!"}', None),
        ("/api/messages", b"[" * 5000, None),  # too large for this server (413)
        ("/api/messages", b'{"topic": "t", "payload": "eA=="}', {"content-type": "text/plain"}),  # 415
        ("/api/messages", b'{"topic": "t", "payload": "eA=="}', {"sec-fetch-site": "cross-site"}),  # 403
        ("/api/messages", b'{"topic": "t", "payload": "eA=="}', {"origin": "https://evil.example"}),  # 403
        ("/api/messages", b'{"topic": "t", "payload": "eA=="}', {"x-tenant": "no-such-tenant"}),  # 404
        ("/api/messages/batch", b'{"topic": "t", "messages": []}', None),
        ("/api/messages/batch", b'{"topic": "t", "messages": [{"payload": "eA=="}, {"payload": 1}, {}]}', None),
        ("/api/messages/batch", b'{"messages": [{"payload": "eA=="}]}', None),  # no topic anywhere
        ("/api/messages/dequeue", b'{"topic": "t", "count": 0}', None),
        ("/api/messages/dequeue", b'{"topic": "t", "wait_seconds": 99}', None),
        ("/api/messages/dequeue", b'{"count": 1}', None),
        ("/api/messages/ack", b'{"acks": []}', None),
        ("/api/messages/ack", b'{"acks": [{"receipt": "r"}]}', None),
        ("/api/messages/0190c0de-0000-7000-8000-000000000000/ack", b'{"receipt": "r"}', None),  # no such message
        ("/api/messages/not-a-uuid/ack", b"", None),
        ("/api/messages/0190c0de-0000-7000-8000-000000000000/ack", b'{"receipt": 1}', None),
    ],
)
async def test_refusals_answer_alike(pair: Pair, path: str, body: bytes, headers: dict[str, str] | None) -> None:
    sent = {"content-type": "application/json", **(headers or {})}
    answer, _ = await pair.same(path, body, headers=sent)
    assert 400 <= answer.status_code < 500


async def test_an_empty_body_is_refused_alike(pair: Pair) -> None:
    """The same sentence on both paths (the framework once answered a KeyError's text, `'data'`)."""
    answers = await pair.send("/api/messages", b"", headers={"content-type": "application/json"})
    assert [a.status_code for a in answers] == [400, 400]
    assert answers[0].json() == answers[1].json() == {"code": "invalid_request", "error": "a JSON body is required"}


@pytest.mark.parametrize(
    ("auth", "headers"),
    [
        (None, {}),
        (("bench-nobody", "wrong"), {}),
        (None, {"x-requested-with": "skiplock-console"}),  # the console's challenge
        (None, {"authorization": "Bearer not-a-token"}),
        (None, {"authorization": "Basic !!!"}),
    ],
)
async def test_authentication_refusals_answer_alike(pair: Pair, auth: Any, headers: dict[str, str]) -> None:
    body = b'{"topic": "t", "payload": "eA=="}'
    answer, _ = await pair.same(
        "/api/messages", body, headers={"content-type": "application/json", **headers}, auth=auth
    )
    assert answer.status_code == 401


async def test_a_member_without_a_grant_is_refused_alike(pair: Pair, make_user: Any) -> None:
    members = [await make_user("member", t) for t in pair.tenants]
    for path, body in [
        ("/api/messages", {"topic": "t", "payload": b64("x")}),
        ("/api/messages/batch", {"topic": "t", "messages": [{"payload": b64("x")}]}),
        ("/api/messages/dequeue", {"topic": "t"}),
    ]:
        answers = [
            await pair.clients[n].post(path, json=body, auth=members[n], headers={"X-Request-ID": "same-id"})
            for n in (0, 1)
        ]
        assert answers[0].status_code == answers[1].status_code == 403
        assert answers[0].content == answers[1].content


async def test_other_methods_and_paths_go_to_the_framework(pair: Pair) -> None:
    assert (await pair.same("/api/messages/dequeue", method="GET"))[0].status_code == 405
    assert (await pair.same("/api/messages/", json={"topic": "t", "payload": b64("x")}))[0].status_code == 201
    assert (await pair.same("/api/messages/a/b/ack", json={}))[0].status_code in (404, 405)


async def test_the_hot_routes_are_timed_under_the_apps_route_templates(
    servers: tuple[Server, Server], pair: Pair
) -> None:
    await pair.same("/api/messages/0190c0de-0000-7000-8000-000000000000/ack", json={"receipt": "r"})
    await pair.same("/api/messages", json={"topic": "t", "payload": b64("x")})
    for server in servers:
        exposition = httpx.get(f"{server.base_url}/metrics").text
        name = "skiplock_http_request_duration_seconds_count"
        ack = metric(exposition, name, route="/api/messages/{message_id}/ack", method="POST", status="4xx")
        enqueue = metric(exposition, name, route="/api/messages", method="POST", status="2xx")
        assert ack is not None and ack >= 1, exposition
        assert enqueue is not None and enqueue >= 1


async def test_the_hot_paths_answers_came_from_the_lean_path(servers: tuple[Server, Server], pair: Pair) -> None:
    """Each of the five routes, once to each server: the server with hot routes counts each on its lean path (so
    the comparisons above compared the lean path with the framework), the other never takes it."""
    lean = "skiplock_http_lean_requests_total"
    routes = ["/api/messages", "/api/messages/batch", "/api/messages/dequeue", "/api/messages/ack"]
    routes.append("/api/messages/{message_id}/ack")

    def counts(server: Server) -> list[float | None]:
        exposition = httpx.get(f"{server.base_url}/metrics").text
        return [metric(exposition, lean, route=route) for route in routes]

    before = counts(servers[0])
    await pair.same("/api/messages", json={"topic": "lean", "payload": b64("x")})
    await pair.same("/api/messages/batch", json={"topic": "lean", "messages": [{"payload": b64("y")}]})
    await pair.same("/api/messages/dequeue", json={"topic": "lean", "count": 1})
    unknown = "0190c0de-0000-7000-8000-000000000000"
    await pair.same("/api/messages/ack", json={"acks": [{"id": unknown, "receipt": "r"}]})
    await pair.same(f"/api/messages/{unknown}/ack", json={"receipt": "r"})
    after = counts(servers[0])
    assert [(a or 0) - (b or 0) for a, b in zip(after, before, strict=True)] == [1, 1, 1, 1, 1], after
    assert counts(servers[1]) == [None] * 5  # the framework's server never took the lean path
