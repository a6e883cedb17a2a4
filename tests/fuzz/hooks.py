"""Schemathesis hooks of the fuzz suite (`SCHEMATHESIS_HOOKS=tests.fuzz.hooks`).

A dequeue that waits and gets nothing holds one of the run's two workers for its `wait_seconds`, up to 20 s: as a
tenant admin (who may consume any topic, so every generated topic is waited on) those waits were most of the run.
A valid `wait_seconds` is cut to `LONG_POLL_CAP`: the request is still a long poll, through the same validation and
the same code, and its answer is held to the same checks; invalid values (past 20, negative, not a number) are left
as generated. Long polls' waiting itself is tested where it is measured (tests/integration/test_long_poll_wakeups.py).
"""

from __future__ import annotations

from typing import Any

import schemathesis

LONG_POLL_CAP = 0.2


@schemathesis.hook
def map_body(ctx: schemathesis.HookContext, body: Any) -> Any:
    operation = ctx.operation
    if operation is None or operation.path != "/api/messages/dequeue" or not isinstance(body, dict):
        return body
    wait = body.get("wait_seconds")
    if isinstance(wait, int | float) and not isinstance(wait, bool) and LONG_POLL_CAP < wait <= 20:
        body["wait_seconds"] = LONG_POLL_CAP
    return body
