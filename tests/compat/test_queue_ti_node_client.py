"""queue-ti's gRPC service from Node: every RPC of api/queue_ti/queue.proto through the generic @grpc/grpc-js client,
the proto loaded at run time by @grpc/proto-loader (tests/compat/node/queue_ti_rpcs.mjs), against the session's
server as a tenant admin who logs in over HTTP for a bearer token. queue-ti's own Node client (@queue-ti/client, in
its repository's clients/node) is not published on npm, so this is the Node side of the contract's "queue-ti wire
compatibility"; the messages the script acked are then checked over REST: none left, each in the message log."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Any, NoReturn

import httpx
import pytest

from tests.support.servers import ROOT, Server
from tests.support.tenants import Tenant

pytestmark = pytest.mark.slow

NODE_DIR = ROOT / "tests" / "compat" / "node"
# What npm says when it cannot reach its registry at all (not a package or lockfile fault).
_NO_NETWORK = re.compile(r"\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH)\b")


def _missing(reason: str) -> NoReturn:
    """CI has node, npm and the npm registry (`.ci/run`): there a missing one fails; elsewhere it skips."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def node_checks() -> list[str]:
    """tests/compat/node with its locked packages installed (`npm ci`, once per session); the script's command."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        _missing("node and npm are needed (apt-get install nodejs npm)")
    command = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
    run = subprocess.run(command, cwd=NODE_DIR, capture_output=True, text=True, timeout=300, check=False)
    if run.returncode != 0:
        if _NO_NETWORK.search(run.stderr):
            _missing(f"npm cannot reach its registry, so @grpc/grpc-js cannot be installed:\n{run.stderr[-2000:]}")
        pytest.fail(f"npm ci failed in {NODE_DIR}:\n{run.stdout}{run.stderr}")
    return [str(node), str(NODE_DIR / "queue_ti_rpcs.mjs")]


async def test_every_rpc_from_node_grpc_js(
    node_checks: list[str], server: Server, tenant: Tenant, make_user: Any
) -> None:
    username, password = await make_user("tenant_admin", tenant)
    topic = "node-compat"
    async with httpx.AsyncClient(base_url=server.base_url, auth=(username, password), timeout=30) as rest:
        # Replayable: each acked message is then kept in the topic's message log, where the acks can be seen.
        r = await rest.put(f"/api/topic-configs/{topic}", json={"replayable": True})
        assert r.status_code == 200, r.text
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("SKIPLOCK_")},
            "SKIPLOCK_URL": server.base_url,
            "SKIPLOCK_GRPC_ADDRESS": server.grpc_address,
            "SKIPLOCK_USERNAME": username,
            "SKIPLOCK_PASSWORD": password,
            "TOPIC": topic,
        }
        run = subprocess.run(node_checks, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 0, run.stdout + run.stderr
        lines = run.stdout.strip().splitlines()
        assert sum(line.startswith("ok - ") for line in lines) == 11, run.stdout
        result = json.loads(lines[-1])
        acked: list[str] = result["acked"]
        assert result["topic"] == topic and len(set(acked)) == 5

        r = await rest.get("/api/messages", params={"topic": topic})
        assert r.status_code == 200 and r.json()["items"] == [], r.text  # nothing left waiting or leased
        r = await rest.get(f"/api/topics/{topic}/message-log", params={"limit": 100})
        assert r.status_code == 200, r.text
        log = {entry["id"]: entry for entry in r.json()["items"]}
        assert sorted(log) == sorted(acked)
        first = log[acked[0]]  # enqueued with metadata and a key, nacked once, then acked
        assert first["metadata"] == {"source": "node", "step": "single"}
        assert (first["key"], first["retry_count"]) == ("node-key", 1)
        assert {log[i]["metadata"]["step"] for i in acked[1:4]} == {"batch"}
        assert log[acked[4]]["metadata"] == {"step": "subscribe"}
