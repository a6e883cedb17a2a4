"""The database's functions are those of their one source (`mq.queue.sql.functions`), by versioned name."""

from __future__ import annotations

import hashlib
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
WHERE n.nspname = current_schema() AND p.proname LIKE 'skiplock\\_%'
  AND p.proname NOT LIKE 'skiplock\\_routed\\_%'"""  # (made on Citus from the statements: test_citus.py)


#: What each released version's `CREATE FUNCTION` was, by digest: a migration creates a version from its source here,
#: so a released version never changes (a change is a new version). A new version is added here when it is made.
RELEASED_DIGESTS = {
    "skiplock_topic_exists_v1": "bd376fc2677e28e8",
    "skiplock_topic_count_v1": "023ae71b00083371",
    "skiplock_admit_v1": "3af0a4c8e5b56f6a",
    "skiplock_admit_one_v1": "b516d595a4a801ba",
    "skiplock_admit_copy_v1": "c7147e197a69e7c4",
    "skiplock_admit_copy_all_v1": "12dac59ab3a77bfb",
    "skiplock_group_done_v1": "d581d25f8daba06a",
    "skiplock_group_ack_v1": "fec462593d4b6c8a",
    "skiplock_group_nack_v1": "1382bd9d4c837dbf",
    "skiplock_group_release_v1": "58b4aae4236bf25e",
    "skiplock_group_tombstone_v1": "7d29895524389482",
    "skiplock_group_done_v2": "9df6f0b604d1272b",
    "skiplock_group_ack_v2": "faaa858e4a19e1eb",
    "skiplock_group_nack_v2": "e40a6f089ca0be53",
    "skiplock_group_release_v2": "fd957df689a78178",
    "skiplock_group_tombstone_v2": "060e8680f80d93ee",
    "skiplock_deliveries_tenant_v1": "e01a342e3fccf77f",
    "skiplock_topic_exists_v2": "3deda2ac22d765d7",
    "skiplock_topic_count_v2": "1a447cd06ab1224d",
    "skiplock_admit_v2": "623aa6f6077da9f8",
    "skiplock_admit_one_v2": "34171c6b0422c190",
    "skiplock_admit_copy_v2": "bb72a60f05168bcf",
    "skiplock_admit_copy_all_v2": "9e586690adceb569",
    "skiplock_group_nack_v3": "f509a0a46eebb8a9",
    "skiplock_group_done_v3": "af7b68902321367a",
    "skiplock_group_ack_v3": "7d6f23ac82b2021b",
    "skiplock_group_nack_v4": "263f2d77f92e3b8a",
    "skiplock_count_out_v1": "0047527c37eaa0b5",
    "skiplock_group_release_v3": "a3b95d1b96a54659",
    "skiplock_group_nack_v5": "486d3185b62b4202",
}


def test_a_released_version_never_changes() -> None:
    made = {name: hashlib.sha256(f.create().encode()).hexdigest()[:16] for name, f in functions.RELEASED.items()}
    assert made == RELEASED_DIGESTS


async def test_the_database_holds_each_current_version_as_its_source_says(db: asyncpg.Pool[Any]) -> None:
    held = {(r["name"], r["arguments"]): r for r in await db.fetch(_HELD)}
    for function in (*functions.CURRENT, *functions.SUPERSEDED):
        row = held.pop((function.name, function.arguments), None)
        assert row is not None, f"{function.name}({function.arguments}) is not in the database"
        held_as = (row["returns"], row["language"], row["volatility"])
        assert held_as == (function.returns, function.language, function.volatility), function.name
        assert row["body"].strip() == function.body.strip(), f"{function.name}: the database holds another body"
    # and nothing else: a dropped version is gone, and so are the unversioned functions of the first migrations
    assert held == {}, sorted(held)


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
