"""`make bench-console`: the admin console at scale, on a real server with real Postgres and Redis.

- **Overview**: a tenant with 500 topics. The time the overview takes to show all 500 rows in the system Chromium
  (navigation start to the last row, `admin-ui/bench/overview.mjs`), and `GET /api/topics` alone. Target < 1 s.
- **Topic pages**: a topic of 1,000,000 messages (pending, delayed, processing, failed, expired; keys and metadata
  on some). Each page of `GET /api/topics/{topic}/messages` timed on loopback (an upper bound of server time):
  the first pages, pages deep in the topic, each status, a key and a metadata filter. Target < 100 ms a page.
- **Offset against keyset**: the contract's `GET /api/messages?topic&offset` at growing offsets against a keyset
  page at the same depth.
- **Plans**: EXPLAIN (ANALYZE, BUFFERS) of the live and finished page statements on that topic.

Environment: SKIPLOCK_BENCH_DATABASE_URL, SKIPLOCK_BENCH_REDIS_URL (else embedded servers), SKIPLOCK_CONSOLE_ROWS
(1,000,000), SKIPLOCK_CONSOLE_TOPICS (500), SKIPLOCK_BENCH_ROUNDS (10). Writes bench/out/console.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import asyncpg
import httpx

from mq.db.engine import asyncpg_dsn
from mq.topics import sql as console_sql
from mq.topics.browsing import encode_cursor
from tests.support.servers import (
    ADMIN,
    ROOT,
    migrated_database,
    postgres_server,
    redis_server,
    start_server,
    stop_server,
)

ROWS = int(os.environ.get("SKIPLOCK_CONSOLE_ROWS", "1000000"))
TOPICS = int(os.environ.get("SKIPLOCK_CONSOLE_TOPICS", "500"))
ROUNDS = int(os.environ.get("SKIPLOCK_BENCH_ROUNDS", "10"))
PASSWORD = "bench-password-123"
OUT = ROOT / "bench" / "out" / "console.json"

# 20 messages in each of the wide tenant's topics.
WIDE_FILL = """
INSERT INTO messages (id, tenant_id, topic, payload, status, max_retries, available_at)
SELECT gen_random_uuid(), $1, 'topic-' || lpad((g % $2)::text, 4, '0'), '\\x7b7d'::bytea, 'pending', 3, now()
FROM generate_series(1, $2 * 20) AS g
"""
# One topic of $2 messages enqueued 1 ms apart, as a steady producer leaves them: 70% pending (1 in 7 delayed by an
# hour), 10% processing (leases taken 100 at a time), 10% failed, 10% expired; a key on 1 in 10, metadata on all
# (region), priority 5 on 1 in 50; ids in time order as the API makes them. `available_at` is when a message
# became (or becomes) available: its enqueue time, its delay's end, or its lease's deadline.
DEEP_FILL = """
INSERT INTO messages (id, tenant_id, topic, key, payload, metadata, status, priority, max_retries, available_at,
                      receipt, created_at)
SELECT u.id, $1, 'big', CASE WHEN g % 10 = 0 THEN 'key-' || g END, '{"order": 1}'::bytea,
       jsonb_build_object('region', CASE WHEN g % 4 = 0 THEN 'eu' ELSE 'us' END), s.status,
       CASE WHEN g % 50 = 0 THEN 5 ELSE 0 END, 3,
       CASE s.status WHEN 'processing' THEN now() + interval '5 min' + (g / 100 || ' ms')::interval
                     WHEN 'pending' THEN t.at + CASE WHEN g % 7 = 0 THEN interval '1 hour' ELSE interval '0' END
                     ELSE t.at END,
       CASE s.status WHEN 'processing' THEN gen_random_uuid() END,
       t.at
FROM generate_series(1, $2) AS g,
     LATERAL (SELECT now() - (($2 - g) || ' ms')::interval AS at) AS t,
     LATERAL (SELECT CASE WHEN g % 10 < 7 THEN 'pending' WHEN g % 10 < 8 THEN 'processing'
                          WHEN g % 10 < 9 THEN 'failed' ELSE 'expired' END AS status) AS s,
     LATERAL (SELECT (lpad(to_hex((extract(epoch FROM t.at) * 1000)::bigint), 12, '0')
                      || '7' || substr(md5(g::text), 1, 19))::uuid AS id) AS u
"""


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[max(0, round(len(ordered) * 0.95) - 1)], 1),
        "max_ms": round(ordered[-1], 1),
    }


async def timed(call: Callable[[], Awaitable[httpx.Response]]) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = await call()
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, response


async def setup_tenants(base_url: str) -> dict[str, str]:
    """Two tenants and a tenant admin in each, through the API; their usernames."""
    users = {}
    async with httpx.AsyncClient(base_url=base_url, auth=ADMIN, timeout=60) as admin:
        for slug in ("wide", "deep"):
            (await admin.post("/api/tenants", json={"slug": slug, "name": slug})).raise_for_status()
            made = await admin.post(
                "/api/users",
                json={"username": "ops", "password": PASSWORD, "role": "tenant_admin"},
                headers={"X-Tenant": slug},
            )
            made.raise_for_status()
            users[slug] = made.json()["username"]
    return users


async def measure_overview(base_url: str, username: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base_url, auth=(username, PASSWORD), timeout=60) as c:
        await c.get("/api/topics")
        api = [(await timed(lambda: c.get("/api/topics")))[0] for _ in range(ROUNDS)]
    run = await asyncio.to_thread(
        subprocess.run,
        ["node", "bench/overview.mjs", base_url, username, PASSWORD, str(TOPICS), str(ROUNDS)],
        cwd=ROOT / "admin-ui",
        capture_output=True,
        text=True,
        check=True,
    )
    browser = json.loads(run.stdout.strip().splitlines()[-1])["runs_ms"]
    return {"topics": TOPICS, "api_topics": summary(api), "browser_render": summary(browser), "browser_runs": browser}


async def measure_pages(base_url: str, username: str, conn: asyncpg.Connection[Any], tenant: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base_url, auth=(username, PASSWORD), timeout=60) as c:

        async def walk(name: str, params: dict[str, str], pages: int) -> None:
            times, cursor, shown = [], None, 0
            for _ in range(pages):
                query = {**params, "limit": "50", **({"cursor": cursor} if cursor else {})}
                ms, r = await timed(lambda q=query: c.get("/api/topics/big/messages", params=q))  # type: ignore[misc]
                times.append(ms)
                body = r.json()
                shown += len(body["items"])
                cursor = body["next_cursor"]
                if cursor is None:
                    break
            results[name] = {**summary(times), "pages": len(times), "shown": shown}

        await walk("first 20 pages", {}, 20)
        for status in ("pending", "delayed", "processing", "failed", "expired"):
            await walk(f"status={status}, 10 pages", {"status": status}, 10)
        await walk("key=key-500000, 10 pages", {"key": "key-500000"}, 10)
        await walk('metadata={"region":"eu"}, 10 pages', {"metadata": '{"region": "eu"}'}, 10)

        # Depth: a keyset page starting at the n-th live message, against the contract's offset page at n.
        depth: dict[str, Any] = {}
        for offset in (0, 10_000, 100_000, 500_000, 690_000):
            row = await conn.fetchrow(
                "SELECT priority, available_at, id FROM messages WHERE tenant_id = $1 AND topic = 'big' "
                "AND status IN ('pending', 'processing') ORDER BY priority DESC, available_at, id OFFSET $2 LIMIT 1",
                tenant,
                offset,
            )
            assert row is not None
            cursor = encode_cursor("live", (row["priority"], row["available_at"], row["id"]), reverse=False)
            keyset = [
                (await timed(lambda cur=cursor: c.get("/api/topics/big/messages", params={"cursor": cur})))[0]  # type: ignore[misc]
                for _ in range(5)
            ]
            offset_page = [
                (
                    await timed(
                        lambda o=offset: c.get("/api/messages", params={"topic": "big", "limit": 50, "offset": o})  # type: ignore[misc]
                    )
                )[0]
                for _ in range(3)
            ]
            depth[str(offset)] = {"keyset": summary(keyset), "offset": summary(offset_page)}
        results["depth"] = depth
    return results


async def explain_pages(conn: asyncpg.Connection[Any], tenant: int) -> dict[str, list[str]]:
    plans = {}
    first = (10, datetime.fromtimestamp(0).astimezone(), uuid.UUID(int=0))
    cases: dict[str, tuple[str, tuple[Any, ...]]] = {
        "live page, first (no filter)": (console_sql.live_page([], key_at=0, metadata_at=0), (*first, 50, 50)),
        "live page, status=delayed (window 2000)": (
            console_sql.live_page([console_sql.STATUS_FILTERS["delayed"]["live"] or ""], key_at=0, metadata_at=0),
            (*first, 2000, 50),
        ),
        "done page, first (no filter)": (
            console_sql.done_page([], key_at=0, metadata_at=0),
            (uuid.UUID(int=(1 << 128) - 1), 50, 50),
        ),
    }
    for name, (statement, args) in cases.items():
        rows = await conn.fetch("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement, tenant, "big", *args)
        plans[name] = [r[0] for r in rows]
    return plans


async def main() -> None:
    with (
        postgres_server("SKIPLOCK_BENCH_DATABASE_URL") as server_url,
        redis_server("SKIPLOCK_BENCH_REDIS_URL") as redis_url,
    ):
        async with migrated_database(server_url, "skiplock_console_bench") as database_url:
            server = start_server(
                {
                    "SKIPLOCK_DATABASE_URL": database_url,
                    "SKIPLOCK_REDIS_URL": redis_url,
                    "SKIPLOCK_MIGRATE_ON_START": "false",
                    "SKIPLOCK_DEFAULT_TENANT": "",
                }
            )
            conn = await asyncpg.connect(asyncpg_dsn(database_url))
            try:
                users = await setup_tenants(server.base_url)
                wide = await conn.fetchval("SELECT id FROM tenants WHERE slug = 'wide'")
                deep = await conn.fetchval("SELECT id FROM tenants WHERE slug = 'deep'")
                started = time.perf_counter()
                await conn.execute(WIDE_FILL, wide, TOPICS)
                await conn.execute(DEEP_FILL, deep, ROWS)
                await conn.execute("VACUUM ANALYZE messages")
                print(
                    f"filled {TOPICS} topics and a topic of {ROWS:,} messages in {time.perf_counter() - started:.0f} s"
                )
                result = {
                    "rows": ROWS,
                    "overview": await measure_overview(server.base_url, users["wide"]),
                    "overview_of_the_deep_tenant": await measure_overview_api(server.base_url, users["deep"]),
                    "pages": await measure_pages(server.base_url, users["deep"], conn, deep),
                    "plans": await explain_pages(conn, deep),
                }
            finally:
                await conn.close()
                stop_server(server)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))
    report(result)


async def measure_overview_api(base_url: str, username: str) -> dict[str, float]:
    """`GET /api/topics` of the tenant holding the 1,000,000-message topic (the topic page asks for it too)."""
    async with httpx.AsyncClient(base_url=base_url, auth=(username, PASSWORD), timeout=60) as c:
        return summary([(await timed(lambda: c.get("/api/topics")))[0] for _ in range(ROUNDS)])


def report(result: dict[str, Any]) -> None:
    o = result["overview"]
    print(f"\noverview of {o['topics']} topics: browser {o['browser_render']}, GET /api/topics {o['api_topics']}")
    print(f"GET /api/topics of the tenant with {result['rows']:,} messages: {result['overview_of_the_deep_tenant']}")
    for name, figures in result["pages"].items():
        if name != "depth":
            print(f"page {name}: {figures}")
    for offset, figures in result["pages"]["depth"].items():
        print(f"at live message {int(offset):,}: keyset {figures['keyset']}, offset {figures['offset']}")
    for name, plan in result["plans"].items():
        print(f"\n=== {name}\n" + "\n".join(plan))
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    asyncio.run(main())
