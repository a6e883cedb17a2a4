"""Schemathesis against the served OpenAPI document, as a tenant admin and as a member with grants, every
operation: no 5xx, every answer (errors included, in the contract's `{code, error, details?}`) conforming to the
document in status, content type, headers and body.

The suite runs 5 examples an operation; `make fuzz` runs the recorded run (SKIPLOCK_FUZZ_EXAMPLES=400:
over 20,000) and prints the counts. Checks left out, and why: `positive_data_acceptance` and
`negative_data_rejection` (the document's request schemas are looser than the server's validation in places:
msgspec refuses 1.0 for an integer, and some rules, such as topic patterns in grants, are checked by the
services; tightening the request schemas is the OpenAPI revision's work), `allow_header_conformance` (Litestar's
automatic OPTIONS answer lists one handler group's methods) and `ignored_auth` (run separately: the
authorization matrix, tests/integration/test_authorization_matrix.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.integration.helpers import b64
from tests.support.servers import Server
from tests.support.tenants import Tenant

CHECKS_LEFT_OUT = "ignored_auth,allow_header_conformance,positive_data_acceptance,negative_data_rejection"


def _schemathesis(server: Server, auth: tuple[str, str], examples: int, report: Path) -> tuple[int, int, str]:
    """Run the CLI; (exit code, generated test cases, output)."""
    command = [
        str(Path(sys.executable).parent / "schemathesis"),
        "run",
        f"{server.base_url}/schema/openapi.json",
        "--auth",
        f"{auth[0]}:{auth[1]}",
        "--max-examples",
        str(examples),
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--checks",
        "all",
        "--exclude-checks",
        CHECKS_LEFT_OUT,
        "--workers",
        "2",
        # A long poll holds a dequeue for its wait_seconds (up to 20) when nothing comes: not a timeout, and not a
        # slow answer either (`--checks all` holds every response to 10 s otherwise).
        "--request-timeout",
        "30",
        "--max-response-time",
        "30",
        "--no-color",
    ]
    if seed := os.environ.get("SKIPLOCK_FUZZ_SEED"):
        command += ["--seed", seed]
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.fuzz.hooks", "PYTHONPATH": path}
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False, env=env, cwd=report)
    output = done.stdout + done.stderr
    found = re.search(r"(\d+) generated", output)
    return done.returncode, int(found.group(1)) if found else 0, output


@pytest.fixture
async def roles(db: asyncpg.Pool[Any], tenant: Tenant, make_client: Any) -> dict[str, tuple[str, str]]:
    """A tenant admin, and a member with grants (read everything, produce and consume `f*` topics), both of
    this test's tenant, with some data to find."""
    from tests.support.servers import ADMIN

    admin = make_client(auth=ADMIN, headers={"X-Tenant": tenant.slug})
    made = {}
    for role in ("tenant_admin", "member"):
        password = f"fuzz password {uuid.uuid4().hex[:8]}"
        r = await admin.post("/api/users", json={"username": f"fuzz-{role}", "password": password, "role": role})
        assert r.status_code == 201, r.text
        made[role] = (r.json()["username"], password)
        if role == "member":
            for action, pattern in (("read", "*"), ("produce", "f.*"), ("consume", "f.*"), ("produce", "0")):
                g = await admin.post(
                    f"/api/users/{r.json()['id']}/grants", json={"action": action, "topic_pattern": pattern}
                )
                assert g.status_code == 201, g.text
    for topic in ("f", "f.x", "0"):
        for _ in range(3):
            await admin.post("/api/messages", json={"topic": topic, "payload": b64("seed"), "key": None})
    return made


# The suite runs 5 examples an operation (with the coverage phase's cases, a few thousand requests, 1-3 minutes on a
# CI machine); `make fuzz`'s recorded run (400 examples an operation) takes about 20 min a role.
@pytest.mark.timeout(900 if int(os.environ.get("SKIPLOCK_FUZZ_EXAMPLES", "5")) <= 15 else 3600)
@pytest.mark.parametrize("role", ["tenant_admin", "member"])
async def test_schemathesis_finds_no_server_error_and_no_undocumented_answer(
    server: Server, roles: dict[str, tuple[str, str]], role: str, tmp_path: Path
) -> None:
    examples = int(os.environ.get("SKIPLOCK_FUZZ_EXAMPLES", "5"))
    code, generated, output = _schemathesis(server, roles[role], examples, tmp_path)
    print(f"\nFUZZ {role}: {generated} generated test cases, exit {code}")
    assert code == 0, output[-6000:]
    assert generated > 500, output[-3000:]
    internal = [line for line in server.log().splitlines() if '"internal error' in line]
    assert internal == [], internal[-3:]
