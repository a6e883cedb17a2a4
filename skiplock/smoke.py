"""`python -m skiplock.smoke --url URL`: a deployment's end-to-end check (the Helm chart's `helm test`).

It asks `GET /readyz`, then, as the platform admin (`SKIPLOCK_ADMIN_USERNAME` / `SKIPLOCK_ADMIN_PASSWORD`, the
settings the server bootstraps from) on behalf of a tenant (`--tenant`, else `SKIPLOCK_DEFAULT_TENANT`), enqueues
one message to a topic of its own, dequeues it, checks its payload and acks it. Exits 0 when all of that worked,
else 1 with the step that failed. Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

TOPIC = "skiplock-smoke"


class SmokeError(Exception):
    """A step of the check failed."""


def _call(url: str, method: str, path: str, headers: dict[str, str], body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)  # noqa: S310
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (the URL the operator gave)
            text = response.read()
    except urllib.error.HTTPError as e:
        raise SmokeError(f"{method} {path}: {e.code} {e.read().decode(errors='replace')[:500]}") from e
    except OSError as e:
        raise SmokeError(f"{method} {path}: {e}") from e
    return json.loads(text) if text else None


def run(url: str, username: str, password: str, tenant: str) -> str:
    """The check; returns the id of the message that went through."""
    url = url.rstrip("/")
    _call(url, "GET", "/readyz", {})
    credentials = base64.b64encode(f"{username}:{password}".encode()).decode()
    headers = {"Authorization": f"Basic {credentials}", "X-Tenant": tenant}
    sent = base64.b64encode(f"smoke {time.time_ns()}".encode()).decode()
    enqueued = _call(url, "POST", "/api/messages", headers, {"topic": TOPIC, "payload": sent})
    # Earlier checks' messages may still wait (a check stopped between its dequeue and its ack): take until ours.
    for _ in range(100):
        leased = _call(url, "POST", "/api/messages/dequeue", headers, {"topic": TOPIC, "wait_seconds": 5})
        if not leased["messages"]:
            break
        message = leased["messages"][0]
        _call(url, "POST", f"/api/messages/{message['id']}/ack", headers, {"receipt": message["receipt"]})
        if message["id"] == enqueued["id"]:
            if message["payload"] != sent:
                raise SmokeError(f"message {message['id']} came back with another payload")
            return str(message["id"])
    raise SmokeError(f"message {enqueued['id']} was enqueued but not delivered")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skiplock.smoke", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the API's base URL, e.g. http://skiplock:8080")
    parser.add_argument("--tenant", default=os.environ.get("SKIPLOCK_DEFAULT_TENANT", "default"))
    args = parser.parse_args(argv)
    username = os.environ.get("SKIPLOCK_ADMIN_USERNAME", "admin")
    password = os.environ.get("SKIPLOCK_ADMIN_PASSWORD", "")
    try:
        message_id = run(args.url, username, password, args.tenant)
    except SmokeError as e:
        print(f"smoke check failed: {e}", file=sys.stderr)
        return 1
    print(f"ready; message {message_id} enqueued, dequeued and acked on {TOPIC!r} in tenant {args.tenant!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
