"""The chart's Grafana dashboard and PrometheusRule ask only for what the server exposes.

A server with its workers runs traffic that moves every metric: enqueues, upserts, dequeues, acks, nacks to a DLQ,
a requeue, a lapsed lease, a refusal, a throttled dequeue, a consumer group, a limit, a replay, schedule ticks
fired, refused and skipped, the reapers, a gRPC call and a waiting long poll. Then every PromQL expression of
`helm/skiplock/dashboards/skiplock.json` and of the rendered PrometheusRule is parsed and held against that scrape
(`tests.support.promql`): each metric exposed, each label matched, grouped or joined on carried by its series, each
`$labels.x` of an alert's text a label of its result. docs/operations.md's table lists exactly the metrics exposed.
A renamed metric or label fails the build here, not an operator's dashboard.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import httpx
from prometheus_client.parser import text_string_to_metric_families

from api.queue_ti import queue_pb2, queue_pb2_grpc
from tests.deploy.support import CHART, render
from tests.integration.helpers import b64, dequeue, enqueue, metric, metric_sum
from tests.support import promql
from tests.support.grpc_calls import bearer, login_token
from tests.support.servers import ADMIN, Server, start_server, stop_server
from tests.support.tenants import Tenant
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = CHART / "dashboards" / "skiplock.json"
RUNBOOKS = ROOT / "docs" / "runbooks"
#: Metrics of the Python runtime the dashboard may read beside Skiplock's own.
_RUNTIME = ("process_", "python_")


def dashboard_expressions() -> list[tuple[str, str]]:
    """(panel title, expression) of every query of the dashboard."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [(panel["title"], target["expr"]) for panel in panels for target in panel.get("targets", [])]


def alert_rules() -> list[dict[str, Any]]:
    secrets = {"databaseUrl": "postgresql://a:b@db/skiplock", "redisUrl": "redis://r:6379/0", "adminPassword": "pw"}
    values = {"secrets": secrets, "metrics": {"prometheusRule": {"enabled": True}}}
    [rule] = [o for o in render(values) if o["kind"] == "PrometheusRule"]
    rules: list[dict[str, Any]] = rule["spec"]["groups"][0]["rules"]
    return rules


def exposed_labels(text: str) -> dict[str, frozenset[str]]:
    """Each sample name of a scrape, with the label names its samples carry."""
    names: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            names.setdefault(sample.name, set()).update(sample.labels)
    return {name: frozenset(labels) for name, labels in names.items()}


async def test_every_dashboard_and_alert_expression_queries_what_a_real_server_exposes(
    server_env: dict[str, str], db: Any, tenant: Tenant, make_user: Callable[..., Any]
) -> None:
    env = {
        **server_env,
        "SKIPLOCK_RUN_WORKERS": "true",
        "SKIPLOCK_GAUGES_INTERVAL_SECONDS": "0.5",
        "SKIPLOCK_SCHEDULE_POLL_SECONDS": "0.2",
    }
    srv = start_server(env)
    try:
        text = await _traffic(srv, db, tenant, make_user)
    finally:
        stop_server(srv)
    exposed = exposed_labels(text)

    problems = []
    for title, expr in dashboard_expressions():
        found, _ = promql.check(expr, exposed)
        problems += [f"dashboard panel {title!r}: {p}" for p in found]
    for variable in json.loads(DASHBOARD.read_text())["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = re.fullmatch(r"label_values\((.+), (\w+)\)", variable["definition"])
        assert query is not None, variable["definition"]
        found, labels = promql.check(query[1], exposed)
        problems += [f"variable {variable['name']}: {p}" for p in found]
        if query[2] not in labels:
            problems.append(f"variable {variable['name']}: no label {query[2]!r}")
    for rule in alert_rules():
        found, labels = promql.check(rule["expr"], exposed)
        problems += [f"alert {rule['alert']}: {p}" for p in found]
        for field in ("summary", "description"):
            for label in re.findall(r"\$labels\.(\w+)", rule["annotations"][field]):
                if label not in labels:
                    problems.append(f"alert {rule['alert']}: {field} names $labels.{label}, not in {sorted(labels)}")
    assert not problems, "\n".join(problems)

    # The metrics table of docs/operations.md: every Skiplock metric exposed is listed, and every one listed exists.
    families = {f.name for f in text_string_to_metric_families(text) if f.name.startswith("skiplock_")}
    table = (ROOT / "docs" / "operations.md").read_text()
    documented = set(re.findall(r"^\| `(skiplock_\w+)` \|", table, flags=re.M))
    as_families = {re.sub(r"_total$", "", name) for name in documented}
    assert families - as_families == set(), "exposed but not in docs/operations.md"
    assert as_families - families == set(), "in docs/operations.md but not exposed"


async def test_every_alert_links_its_runbook_and_every_runbook_is_a_procedure() -> None:
    rules = alert_rules()
    for rule in rules:
        url = rule["annotations"]["runbook_url"]
        assert url.endswith(f"/docs/runbooks/{rule['alert']}.md"), url
        page = (RUNBOOKS / f"{rule['alert']}.md").read_text()
        assert page.startswith(f"# {rule['alert']}\n")
        headings = re.findall(r"^## (.+)$", page, flags=re.M)
        assert headings == ["What it means", "Confirm", "Likely causes, in order", "What to do", "When it is over"]
        assert re.search(r"^1\. ", page, flags=re.M), "the causes are numbered, most likely first"
        assert "PromQL" in page
    listed = {p.stem for p in RUNBOOKS.glob("Skiplock*.md")}
    assert listed == {r["alert"] for r in rules}, "a runbook per alert, and no runbook without one"
    index = (RUNBOOKS / "README.md").read_text()
    for alert in listed:
        assert f"]({alert}.md)" in index


async def _traffic(srv: Server, db: Any, tenant: Tenant, make_user: Callable[..., Any]) -> str:
    """Traffic that moves every metric; the scrape taken while a long poll waits and the gauges are in."""
    async with httpx.AsyncClient(base_url=srv.base_url, auth=ADMIN, headers={"X-Tenant": tenant.slug}, timeout=30) as c:

        async def put(path: str, body: dict[str, Any]) -> None:
            r = await c.put(path, json=body)
            assert r.status_code in (200, 201), r.text

        # Messages: enqueued, upserted, delivered, acked, nacked, dead-lettered and requeued, a lease lapsed.
        await enqueue(c, "orders", key="k")
        await enqueue(c, "orders", key="k")
        await enqueue(c, "orders")
        first, second = await dequeue(c, "orders", 2)
        assert (await c.post(f"/api/messages/{first['id']}/ack", json={"receipt": first["receipt"]})).status_code == 204
        assert (await c.post(f"/api/messages/{second['id']}/nack", json={"receipt": second["receipt"]})).is_success
        await put("/api/topic-configs/fragile", {"max_retries": 0})
        await enqueue(c, "fragile")
        [doomed] = await dequeue(c, "fragile")
        r = await c.post(f"/api/messages/{doomed['id']}/nack", json={"receipt": doomed["receipt"]})
        assert r.json()["outcome"] == "dlq", r.text
        [dead] = (await c.get("/api/messages", params={"topic": "fragile.dlq"})).json()["items"]
        assert (await c.post(f"/api/messages/{dead['id']}/requeue")).is_success
        await enqueue(c, "lapse")
        await dequeue(c, "lapse", visibility_timeout_seconds=1)
        await asyncio.sleep(1.2)
        assert len(await dequeue(c, "lapse")) == 1  # redelivered: the lapsed lease counted

        # Limits: a refusal (queue_full) with its 4xx, a throttled dequeue, a max_inflight.
        await put("/api/topic-configs/capped", {"max_depth": 1})
        await enqueue(c, "capped")
        assert (await c.post("/api/messages", json={"topic": "capped", "payload": b64("2")})).status_code == 429
        await put("/api/topic-configs/slow", {"throughput_limit": 1})
        for _ in range(3):
            await enqueue(c, "slow")
        for _ in range(3):
            await dequeue(c, "slow")
        await put("/api/topic-configs/limited", {"max_inflight": 2})
        await enqueue(c, "limited")
        await dequeue(c, "limited")

        # A consumer group with a delivery owed; a replay of a logged message.
        r = await c.post("/api/topics/fan/consumer-groups", json={"consumer_group": "billing"})
        assert r.status_code == 201, r.text
        await enqueue(c, "fan")
        await put("/api/topic-configs/logged", {"replayable": True})
        await enqueue(c, "logged")
        [logged] = await dequeue(c, "logged")
        assert (await c.post(f"/api/messages/{logged['id']}/ack", json={"receipt": logged["receipt"]})).is_success
        r = await c.post("/api/topics/logged/replay", json={})
        assert r.status_code == 200, r.text
        # A paced bulk job (a redrive's kind), run to its end.
        await enqueue(c, "swept")
        job = {"action": "delete", "filter": {"status": "pending"}, "rate_per_second": 100}
        r = await c.post("/api/topics/swept/bulk-jobs", json=job)
        assert r.status_code == 202, r.text

        async def swept() -> bool:
            return bool((await c.get(f"/api/bulk-jobs/{r.json()['id']}")).json()["state"] == "done")

        await eventually(swept, what="the bulk job to end")

        # Schedules: one fires after missed ticks (the older ones skipped), one is refused (its topic is full).
        tick = {"payload": b64("tick"), "cron": "* * * * *"}
        await put("/api/schedules/fires", {**tick, "topic": "ticks"})
        await put("/api/schedules/refused", {**tick, "topic": "capped"})
        await db.execute(
            "UPDATE schedules SET next_run_at = date_trunc('minute', now()) - interval '3 minutes' "
            "WHERE tenant_id = $1",
            tenant.id,
        )

        # The reapers: an expired message, then the delete reaper.
        await db.execute(
            "INSERT INTO messages (id, tenant_id, topic, payload, max_retries, expires_at) "
            "VALUES (gen_random_uuid(), $1, 'ttl', 'x', 3, now() - interval '1 minute')",
            tenant.id,
        )
        async with httpx.AsyncClient(base_url=srv.base_url, auth=ADMIN, timeout=30) as admin:
            assert (await admin.post("/api/admin/expiry-reaper/run")).status_code == 200
            assert (await admin.post("/api/admin/delete-reaper/run")).status_code == 200

        # queue-ti's gRPC service: one call.
        token = await login_token(srv, *(await make_user("tenant_admin", tenant)))
        async with grpc.aio.insecure_channel(srv.grpc_address) as channel:
            stub = queue_pb2_grpc.QueueServiceStub(channel)
            await stub.Enqueue(queue_pb2.EnqueueRequest(topic="rpc", payload=b"p"), metadata=bearer(token))

        # Then scrape while a long poll waits, once the workers' gauges and ticks are in.
        waiting = asyncio.ensure_future(c.post("/api/messages/dequeue", json={"topic": "idle", "wait_seconds": 20}))
        labels = {"tenant": tenant.slug}

        async def complete() -> str | None:
            text = (await c.get("/metrics")).text
            ready = (
                metric_sum(text, "skiplock_long_polls_waiting", **labels, topic="idle") >= 1
                and metric(text, "skiplock_group_messages", **labels, topic="fan", consumer_group="billing") is not None
                and metric(text, "skiplock_messages", **labels, topic="fragile", status="pending") is not None
                and metric_sum(text, "skiplock_schedule_ticks_total", **labels) >= 1
                and metric_sum(text, "skiplock_schedule_ticks_refused_total", **labels) >= 1
                and metric_sum(text, "skiplock_schedule_ticks_skipped_total", **labels) >= 1
            )
            return text if ready else None

        try:
            return await eventually(complete, timeout=20, what="every metric moved")
        finally:
            waiting.cancel()
