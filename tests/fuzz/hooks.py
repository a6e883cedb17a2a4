"""Schemathesis hooks of the fuzz suite (`SCHEMATHESIS_HOOKS=tests.fuzz.hooks`).

A dequeue that waits and gets nothing holds one of the run's two workers for its `wait_seconds`, up to 20 s: as a
tenant admin (who may consume any topic, so every generated topic is waited on) those waits were most of the run.
A valid `wait_seconds` is cut to `LONG_POLL_CAP`: the request is still a long poll, through the same validation and
the same code, and its answer is held to the same checks; invalid values (past 20, negative, not a number) are left
as generated. Long polls' waiting itself is tested where it is measured (tests/integration/test_long_poll_wakeups.py).
"""

from __future__ import annotations

import atexit
import collections
import json
import os
from pathlib import Path
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


# SKIPLOCK_FUZZ_TIMES=<file>: the seconds each operation's answers took in all, written when the run ends (to find
# what makes a run slow).
if _times_file := os.environ.get("SKIPLOCK_FUZZ_TIMES"):
    _times: collections.Counter[str] = collections.Counter()
    atexit.register(lambda: Path(_times_file).write_text(json.dumps(_times.most_common(), indent=1)))

    @schemathesis.hook
    def after_call(ctx: schemathesis.HookContext, case: Any, response: Any) -> None:
        _times[f"{case.operation.method.upper()} {case.operation.path}"] += float(response.elapsed)
