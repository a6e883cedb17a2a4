"""Every route of the app's route table, for every kind of caller: allowed or refused, as the contract says.

The routes come from the application itself, so a new route without a rule here fails `test_every_route_has_a_
rule`. Callers: anonymous, a member without grants, a member with grants on the topic, the admin of another
tenant, the tenant admin, a platform admin (X-Tenant). Refused means 401 (anonymous), 403 (role or grant), or 404
for another tenant's admin acting on this tenant's ids (never 403: an id's existence is not revealed). Allowed
means anything but 401, 403 or 5xx (a 404 or 409 of the request's own making is fine).
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest
from litestar.exceptions import LitestarDeprecationWarning

from api.app import create_app
from mq.settings import Settings
from mq.tenancy.passwords import hash_password
from tests.integration.helpers import b64
from tests.support.servers import ADMIN
from tests.support.tenants import Tenant

PUBLIC, ANY_USER, LIST, READ, PRODUCE, CONSUME, TENANT_ADMIN, PLATFORM = (
    "public",
    "any authenticated caller",
    "any caller of the tenant (members see the topics they may read)",
    "read",
    "produce",
    "consume",
    "tenant admins",
    "platform admins",
)
#: Members need `read` on `*` (none of the personas has it): the tenant-wide figures cover every topic.
READ_EVERY_TOPIC = "read on every topic"
PERSONAS = (
    "anonymous",
    "member without grant",
    "other tenant's admin",
    "member with grant",
    "tenant admin",
    "platform admin",
)


@dataclass(frozen=True)
class Rule:
    who: str  # which callers may (see the constants above)
    body: Callable[[Fixtures], Any] | None = None
    names_an_id: bool = False  # the path names one of this tenant's resources by id
    query: dict[str, str] | None = None


# (method, path template) -> rule. Bodies are valid, so that a refusal is about the caller, not the input.
RULES: dict[tuple[str, str], Rule] = {
    ("POST", "/api/messages"): Rule(PRODUCE, lambda f: {"topic": "mx", "payload": b64("m")}),
    ("GET", "/api/messages"): Rule(READ, query={"topic": "mx"}),
    ("POST", "/api/messages/batch"): Rule(PRODUCE, lambda f: {"topic": "mx", "messages": [{"payload": b64("b")}]}),
    ("POST", "/api/messages/dequeue"): Rule(CONSUME, lambda f: {"topic": "mx"}),
    ("POST", "/api/messages/ack"): Rule(CONSUME, lambda f: {"acks": [{"id": f.message_id}]}),
    ("GET", "/api/messages/{message_id}"): Rule(READ, names_an_id=True),
    ("GET", "/api/messages/{message_id}/story"): Rule(READ, names_an_id=True),
    ("GET", "/api/topics/{topic}/consumers"): Rule(READ),
    ("GET", "/api/topics/{topic}/error-classes"): Rule(READ),
    ("DELETE", "/api/messages/{message_id}"): Rule(TENANT_ADMIN, names_an_id=True),
    ("POST", "/api/messages/{message_id}/ack"): Rule(CONSUME, lambda f: {}, names_an_id=True),
    ("POST", "/api/messages/{message_id}/nack"): Rule(CONSUME, lambda f: {}, names_an_id=True),
    ("POST", "/api/messages/{message_id}/visibility"): Rule(
        CONSUME, lambda f: {"visibility_timeout_seconds": 5}, names_an_id=True
    ),
    ("POST", "/api/messages/{message_id}/requeue"): Rule(CONSUME, names_an_id=True),
    ("POST", "/api/messages/{message_id}/retry"): Rule(CONSUME, names_an_id=True),
    ("POST", "/api/topics/{topic}/pause"): Rule(TENANT_ADMIN),
    ("POST", "/api/topics/{topic}/resume"): Rule(TENANT_ADMIN),
    ("POST", "/api/topics/{topic}/consumer-groups"): Rule(TENANT_ADMIN, lambda f: {"consumer_group": "g"}),
    ("GET", "/api/topics/{topic}/consumer-groups"): Rule(READ),
    ("DELETE", "/api/topics/{topic}/consumer-groups/{group}"): Rule(TENANT_ADMIN),
    ("GET", "/api/topics/{topic}/messages"): Rule(READ),
    ("GET", "/api/topics/{topic}/series"): Rule(READ),
    ("GET", "/api/series"): Rule(READ_EVERY_TOPIC),
    ("GET", "/api/topics/{topic}/config"): Rule(READ),
    ("POST", "/api/topics/{topic}/messages/bulk"): Rule(CONSUME, lambda f: {"action": "retry", "ids": [f.message_id]}),
    ("POST", "/api/topics/{topic}/bulk-jobs"): Rule(
        CONSUME, lambda f: {"action": "retry", "filter": {"status": "failed"}}
    ),
    ("GET", "/api/bulk-jobs"): Rule(LIST),
    ("GET", "/api/bulk-jobs/{job_id}"): Rule(READ, names_an_id=True),
    ("DELETE", "/api/bulk-jobs/{job_id}"): Rule(CONSUME, names_an_id=True),
    ("GET", "/api/admin/jobs"): Rule(PLATFORM),
    ("GET", "/api/audit"): Rule(TENANT_ADMIN),
    ("GET", "/api/admin/delete-reaper/schedule/preview"): Rule(PLATFORM, query={"schedule": "0 3 * * 1"}),
    ("DELETE", "/api/topics/{topic}/messages/by-key/{key}"): Rule(TENANT_ADMIN),
    ("GET", "/api/topic-configs"): Rule(LIST),
    ("GET", "/api/topic-configs/{topic}"): Rule(READ),
    ("PUT", "/api/topic-configs/{topic}"): Rule(TENANT_ADMIN, lambda f: {"max_retries": 3}),
    ("DELETE", "/api/topic-configs/{topic}"): Rule(TENANT_ADMIN),
    ("GET", "/api/topics"): Rule(LIST),
    ("POST", "/api/topics/{topic}/purge"): Rule(TENANT_ADMIN, lambda f: {"statuses": ["failed"]}),
    ("POST", "/api/topics/{topic}/requeue"): Rule(CONSUME),
    ("GET", "/api/stats"): Rule(LIST),
    ("GET", "/api/tenants"): Rule(PLATFORM),
    ("POST", "/api/tenants"): Rule(PLATFORM, lambda f: {"slug": f"m-{uuid.uuid4().hex[:10]}", "name": "m"}),
    ("GET", "/api/tenants/{slug}"): Rule(PLATFORM),
    ("PATCH", "/api/tenants/{slug}"): Rule(PLATFORM, lambda f: {"name": "renamed"}),
    ("DELETE", "/api/tenants/{slug}"): Rule(PLATFORM),
    ("GET", "/api/users"): Rule(TENANT_ADMIN),
    ("POST", "/api/users"): Rule(
        TENANT_ADMIN, lambda f: {"username": f"n-{uuid.uuid4().hex[:8]}", "password": "matrix password"}
    ),
    ("GET", "/api/users/{user_id}"): Rule(TENANT_ADMIN, names_an_id=True),
    ("PATCH", "/api/users/{user_id}"): Rule(TENANT_ADMIN, lambda f: {"role": "member"}, names_an_id=True),
    ("DELETE", "/api/users/{user_id}"): Rule(TENANT_ADMIN, names_an_id=True),
    ("GET", "/api/users/{user_id}/grants"): Rule(TENANT_ADMIN, names_an_id=True),
    ("POST", "/api/users/{user_id}/grants"): Rule(
        TENANT_ADMIN, lambda f: {"action": "read", "topic_pattern": f"t{uuid.uuid4().hex[:6]}"}, names_an_id=True
    ),
    ("DELETE", "/api/users/{user_id}/grants/{grant_id}"): Rule(TENANT_ADMIN, names_an_id=True),
    ("GET", "/api/admin/delete-reaper/schedule"): Rule(PLATFORM),
    ("PUT", "/api/admin/delete-reaper/schedule"): Rule(PLATFORM, lambda f: {"schedule": ""}),
    ("POST", "/api/admin/delete-reaper/run"): Rule(PLATFORM),
    ("POST", "/api/admin/expiry-reaper/run"): Rule(PLATFORM),
    ("POST", "/api/admin/archive-reaper/run"): Rule(PLATFORM),
    ("GET", "/api/topics/{topic}/message-log"): Rule(READ),
    ("DELETE", "/api/topics/{topic}/message-log"): Rule(TENANT_ADMIN, query={"before": "2000-01-01T00:00:00Z"}),
    ("POST", "/api/topics/{topic}/replay"): Rule(TENANT_ADMIN, lambda f: {"to_time": "2000-01-01T00:00:00Z"}),
    ("GET", "/api/topic-schemas"): Rule(LIST),
    ("GET", "/api/topic-schemas/{topic}"): Rule(READ),
    ("PUT", "/api/topic-schemas/{topic}"): Rule(
        TENANT_ADMIN,
        lambda f: {"schema_json": "{}", "format": "json_schema"},  # the fixtures' payload fits
    ),
    ("DELETE", "/api/topic-schemas/{topic}"): Rule(TENANT_ADMIN),
    ("GET", "/api/schedules"): Rule(LIST),
    ("GET", "/api/schedules/{name}"): Rule(LIST),
    ("PUT", "/api/schedules/{name}"): Rule(
        TENANT_ADMIN, lambda f: {"topic": "mx", "cron": "0 0 1 1 *", "payload": b64('{"x": 1}')}
    ),
    ("DELETE", "/api/schedules/{name}"): Rule(TENANT_ADMIN),
    ("POST", "/api/schedules/{name}/run"): Rule(TENANT_ADMIN),
    ("PUT", "/api/admin/platform-admins/{username}/password"): Rule(PLATFORM, lambda f: {"password": f.spare_password}),
    ("POST", "/api/auth/session"): Rule(ANY_USER),
    ("DELETE", "/api/auth/session"): Rule(ANY_USER),
    ("GET", "/api/auth/me"): Rule(ANY_USER),
    ("POST", "/api/auth/login"): Rule(PUBLIC, lambda f: {"username": f.spare_admin, "password": f.spare_password}),
    ("POST", "/api/auth/refresh"): Rule(ANY_USER),
    ("PUT", "/api/auth/password"): Rule(
        ANY_USER, lambda f: {"current_password": f.password, "new_password": f.password}
    ),
    ("GET", "/healthz"): Rule(PUBLIC),
    ("GET", "/readyz"): Rule(PUBLIC),
    ("GET", "/metrics"): Rule(PUBLIC),
    ("GET", "/api/version"): Rule(PUBLIC),
    ("GET", "/api/auth/status"): Rule(PUBLIC),
    ("GET", "/schema"): Rule(PUBLIC),
    ("GET", "/schema/scalar"): Rule(PUBLIC),
    ("GET", "/schema/openapi.json"): Rule(PUBLIC),
    ("GET", "/schema/{path}"): Rule(PUBLIC),
    # the admin console's build (api.ui); unknown /api paths under it answer 404 for every method
    **{(m, p): Rule(PUBLIC) for m in ("GET", "POST", "PUT", "PATCH", "DELETE") for p in ("/", "/{path}")},
}


def route_table() -> list[tuple[str, str]]:
    with warnings.catch_warnings():  # Litestar's notes on handler signatures, shown once when the server starts
        warnings.simplefilter("ignore", LitestarDeprecationWarning)
        app = create_app(Settings(database_url="postgresql://unused"))
    return sorted(
        (method, route.path_format)
        for route in app.routes
        for method in getattr(route, "methods", ())
        if method not in ("OPTIONS", "HEAD")
    )


def test_every_route_has_a_rule() -> None:
    routes = route_table()
    assert [r for r in routes if r not in RULES] == []
    assert [r for r in RULES if r not in routes] == []


@dataclass
class Fixtures:
    """What the paths name, made fresh for each route: this tenant's message, user, grant, a spare tenant."""

    message_id: str
    user_id: str
    grant_id: str
    slug: str
    spare_admin: str
    spare_password: str
    job_id: str
    password: str = ""

    def path(self, template: str) -> str:
        return (
            template.replace("{message_id}", self.message_id)
            .replace("{user_id}", self.user_id)
            .replace("{grant_id}", self.grant_id)
            .replace("{job_id}", self.job_id)
            .replace("{slug}", self.slug)
            .replace("{topic}", "mx")
            .replace("{key}", "k")
            .replace("{group}", "g")
            .replace("{name}", "nightly")
            .replace("{username}", self.spare_admin)
            .replace("{path}", "openapi.yaml")
        )


def _allowed(rule: Rule, persona: str) -> bool:
    if rule.who == PUBLIC:
        return True
    if persona == "anonymous":
        return False
    if rule.who in (ANY_USER, LIST):
        return True
    if rule.who == PLATFORM:
        return persona == "platform admin"
    if rule.who in (TENANT_ADMIN, READ_EVERY_TOPIC):
        return persona in ("tenant admin", "platform admin", "other tenant's admin")
    return persona != "member without grant"  # read, produce, consume: members need the grant


@pytest.fixture
async def personas(
    make_user: Any, tenant: Tenant, db: asyncpg.Pool[Any]
) -> dict[str, tuple[tuple[str, str] | None, dict[str, str]]]:
    other_slug = f"o-{uuid.uuid4().hex[:10]}"
    other_id = await db.fetchval("INSERT INTO tenants (slug, name) VALUES ($1, $1) RETURNING id", other_slug)
    granted = await make_user("member", tenant)
    member_id = await db.fetchval("SELECT id FROM users WHERE username = $1", granted[0])
    for action in ("produce", "consume", "read"):
        await db.execute(
            "INSERT INTO grants (id, tenant_id, user_id, action, topic_pattern) VALUES ($1, $2, $3, $4, 'mx')",
            uuid.uuid4(),
            tenant.id,
            member_id,
            action,
        )
    return {
        "anonymous": (None, {}),
        "member without grant": (await make_user("member", tenant), {}),
        "other tenant's admin": (await make_user("tenant_admin", Tenant(other_id, other_slug)), {}),
        "member with grant": (granted, {}),
        "tenant admin": (await make_user("tenant_admin", tenant), {}),
        "platform admin": (ADMIN, {"X-Tenant": tenant.slug}),
    }


_HASH = hash_password("victim password")


async def _fixtures(
    client: httpx.AsyncClient, db: asyncpg.Pool[Any], tenant: Tenant, spare: tuple[str, str]
) -> Fixtures:
    r = await client.post("/api/messages", json={"topic": "mx", "payload": b64('{"x": 1}')})  # JSON: a schema may apply
    message_id = r.json()["id"]
    user_id, grant_id = uuid.uuid4(), uuid.uuid4()
    await db.execute(
        "INSERT INTO users (id, tenant_id, username, password_hash, role) VALUES ($1, $2, $3, $4, 'member')",
        user_id,
        tenant.id,
        f"v-{user_id.hex[:10]}@{tenant.slug}",
        _HASH,
    )
    await db.execute(
        "INSERT INTO grants (id, tenant_id, user_id, action, topic_pattern) VALUES ($1, $2, $3, 'read', '*')",
        grant_id,
        tenant.id,
        user_id,
    )
    slug = f"s-{uuid.uuid4().hex[:10]}"
    await db.execute("INSERT INTO tenants (slug, name) VALUES ($1, $1)", slug)
    r = await client.post("/api/topics/mx/bulk-jobs", json={"action": "retry", "filter": {"status": "failed"}})
    return Fixtures(message_id, str(user_id), str(grant_id), slug, spare[0], spare[1], r.json()["id"])


async def test_the_authorization_matrix(
    client: httpx.AsyncClient, make_client: Any, make_user: Any, tenant: Tenant, db: asyncpg.Pool[Any], personas: Any
) -> None:
    wrong: list[str] = []
    checked = 0
    spare = await make_user("platform_admin", None)  # its password is set to itself again
    stale = True
    for method, template in route_table():
        rule = RULES[(method, template)]
        if stale:  # fresh ones after a route that may have changed or deleted them
            fixtures = await _fixtures(client, db, tenant, spare)
        stale = method != "GET"
        for persona in PERSONAS:  # the other tenant's admin comes before anyone who could delete the resources
            auth, headers = personas[persona]
            fixtures.password = auth[1] if auth else ""
            caller = make_client(auth=auth, headers=headers)
            body = rule.body(fixtures) if rule.body else None
            r = await caller.request(method, fixtures.path(template), json=body, params=rule.query)
            checked += 1
            if r.status_code >= 500:
                wrong.append(f"{persona} {method} {template}: {r.status_code} {r.text[:200]}")
                continue
            if persona == "other tenant's admin" and rule.names_an_id and rule.who != PLATFORM:
                if r.status_code != 404:
                    wrong.append(f"{persona} {method} {template}: {r.status_code}, not 404")
                continue
            refused = r.status_code in (401, 403)
            if refused == _allowed(rule, persona):
                wrong.append(f"{persona} {method} {template}: {r.status_code} {r.text[:160]}")
    assert wrong == [], "\n".join(wrong)
    assert checked == len(route_table()) * len(PERSONAS)
