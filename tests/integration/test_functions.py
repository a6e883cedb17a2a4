"""The database's functions are those of their one source (`mq.queue.sql.functions`), by versioned name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import asyncpg

from mq.queue.sql import functions

ROOT = Path(__file__).resolve().parents[2]

_HELD = """
SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS returns, l.lanname AS language, p.prosrc AS body,
       CASE p.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END AS volatility
FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace JOIN pg_language AS l ON l.oid = p.prolang
WHERE n.nspname = current_schema() AND p.proname LIKE 'skiplock\\_%'"""


async def test_the_database_holds_each_current_version_as_its_source_says(db: asyncpg.Pool[Any]) -> None:
    held = {(r["name"], r["arguments"]): r for r in await db.fetch(_HELD)}
    for function in functions.CURRENT:
        row = held.pop((function.name, function.arguments), None)
        assert row is not None, f"{function.name}({function.arguments}) is not in the database"
        held_as = (row["returns"], row["language"], row["volatility"])
        assert held_as == (function.returns, function.language, function.volatility), function.name
        assert row["body"].strip() == function.body.strip(), f"{function.name}: the database holds another body"
    # what is left: the unversioned functions kept for the release before, and nothing else
    assert set(held) <= set(functions.UNVERSIONED), sorted(set(held) - set(functions.UNVERSIONED))


def test_each_current_version_is_released_under_its_name() -> None:
    for function in functions.CURRENT:
        assert re.fullmatch(r"skiplock_[a-z_]+_v\d+", function.name), function.name
        assert functions.RELEASED[function.name] is function


def test_the_code_calls_only_versioned_functions() -> None:
    """A statement that called `skiplock_group_ack(...)` would call what an old migration left, not the source."""
    calls = re.compile(r"\bskiplock_[a-z_]+\(")
    for path in [*ROOT.joinpath("mq").rglob("*.py"), *ROOT.joinpath("api").rglob("*.py")]:
        if path.name == "functions.py":
            continue
        for line in path.read_text().splitlines():
            if line.lstrip().startswith("#"):
                continue
            for call in calls.findall(line):
                raise AssertionError(f"{path.relative_to(ROOT)} calls {call}: call `functions.<NAME>.name`")
