"""The engine's connections learn a type's codec with Skiplock's introspection query (`mq.db.introspection`): the same
rows as asyncpg's own query, for every kind of type, and values of those types round-trip through it."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
from asyncpg import introspection as asyncpg_introspection

from mq.db.engine import asyncpg_dsn, create_pool
from mq.db.introspection import INTROSPECTION, Connection

_TYPES = """
CREATE DOMAIN {p}_ints AS int4[];
CREATE DOMAIN {p}_ints2 AS {p}_ints;
CREATE TYPE {p}_mood AS ENUM ('calm', 'busy');
CREATE TYPE {p}_row AS (a int, b text[], c {p}_ints2, d {p}_mood, e int4range, f int4multirange, g uuid[])"""


def _rows(records: list[Any]) -> list[tuple[Any, ...]]:
    """The answer as asyncpg reads it: by depth, deepest first (the order within a depth is the server's)."""
    return sorted((tuple(r) for r in records), key=lambda r: (-r[10], r[0]))


async def test_the_introspection_answers_what_asyncpgs_does(database_url: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await conn.execute(_TYPES.format(p=prefix))
        await conn.execute("SET jit = off")  # (asyncpg turns it off for its query too)
        names = ["_uuid", "_bytea", "_int8", "jsonb", "int4range", "int4multirange", "_tstzrange", "record"]
        names += [f"{prefix}_row", f"_{prefix}_row", f"{prefix}_ints2", f"_{prefix}_mood", "messages", "_messages"]
        oids = [r[0] for r in await conn.fetch("SELECT oid FROM pg_type WHERE typname = ANY($1::text[])", names)]
        assert len(oids) == len(names)
        for asked in [[oid] for oid in oids] + [oids]:
            theirs = await conn.fetch(asyncpg_introspection.INTRO_LOOKUP_TYPES, asked)
            ours = await conn.fetch(INTROSPECTION, asked)
            assert list(ours[0].keys()) == list(theirs[0].keys())
            assert _rows(ours) == _rows(theirs), asked
    finally:
        await conn.execute(f"DROP TYPE IF EXISTS {prefix}_row, {prefix}_mood; DROP DOMAIN IF EXISTS {prefix}_ints2")
        await conn.execute(f"DROP DOMAIN IF EXISTS {prefix}_ints")
        await conn.close()


async def test_the_engines_connections_use_it_and_decode_what_it_finds(database_url: str) -> None:
    pool = await create_pool(database_url, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            assert isinstance(conn, Connection)
            assert conn._intro_query == INTROSPECTION  # asyncpg's attribute, still read by this release of asyncpg
            ids = [uuid.uuid4(), uuid.uuid4()]
            row = await conn.fetchrow(
                "SELECT $1::uuid[] AS ids, $2::bytea[] AS payloads, ROW(1, $1::uuid[]) AS pair", ids, [b"x", None]
            )
            assert row is not None
            assert list(row["ids"]) == ids and list(row["payloads"]) == [b"x", None]
            assert tuple(row["pair"]) == (1, ids)
    finally:
        await pool.close()
