"""asyncpg's type introspection, made fast on databases with many relations (a Citus cluster's shards).

asyncpg learns the codec of a type it has no built-in one for (among Skiplock's: `uuid[]`, `bytea[]`) by asking
the server, once per connection, with a recursive query over `pg_type` (`asyncpg.introspection`). That query
computes every type's description before it picks the asked ones, and a composite type's columns by a scan of
`pg_class` (its join on `reltype` has no index): its cost grows with the relations squared. On a Citus coordinator
it took 0.8 s per connection alone and 3.5 s with eight connecting at once; on a worker (its shards: thousands of
relations) 5.5 s alone and 41 s with eight. Each new pool connection's first request waited that long: requests
answered 503 past the statement timeout while a pool grew, and a bench round measured little but that.

`INTROSPECTION` answers exactly what asyncpg's query answers (the same columns and rows; a test compares both on
a database with domains, composites, ranges and enums), walking only the asked types and what they are made of,
each looked up by its oid, and a composite's columns by its `typrelid`. `Connection` is asyncpg's connection with
this query, for `asyncpg.create_pool(connection_class=...)`.
"""

from __future__ import annotations

from typing import Any

import asyncpg

# One type's description, as asyncpg's `_TYPEINFO` has it, but a composite's columns found through `typrelid`.
_TYPEINFO = """
    (
        SELECT
            t.oid AS oid,
            ns.nspname AS ns,
            t.typname AS name,
            t.typtype AS kind,
            (CASE WHEN t.typtype = 'd' THEN
                (WITH RECURSIVE typebases(oid, depth) AS (
                    SELECT t2.typbasetype AS oid, 0 AS depth FROM pg_catalog.pg_type AS t2 WHERE t2.oid = t.oid
                    UNION ALL
                    SELECT t2.typbasetype AS oid, tb.depth + 1 AS depth
                    FROM pg_catalog.pg_type AS t2, typebases AS tb
                    WHERE tb.oid = t2.oid AND t2.typbasetype != 0
                ) SELECT oid FROM typebases ORDER BY depth DESC LIMIT 1)
            END) AS basetype,
            t.typelem AS elemtype,
            elem_t.typdelim AS elemdelim,
            COALESCE(range_t.rngsubtype, multirange_t.rngsubtype) AS range_subtype,
            (CASE WHEN t.typtype = 'c' THEN
                (SELECT array_agg(ia.atttypid ORDER BY ia.attnum) FROM pg_catalog.pg_attribute AS ia
                 WHERE ia.attrelid = t.typrelid AND ia.attnum > 0 AND NOT ia.attisdropped)
            END) AS attrtypoids,
            (CASE WHEN t.typtype = 'c' THEN
                (SELECT array_agg(ia.attname::text ORDER BY ia.attnum) FROM pg_catalog.pg_attribute AS ia
                 WHERE ia.attrelid = t.typrelid AND ia.attnum > 0 AND NOT ia.attisdropped)
            END) AS attrnames
        FROM pg_catalog.pg_type AS t
        JOIN pg_catalog.pg_namespace AS ns ON ns.oid = t.typnamespace
        LEFT JOIN pg_catalog.pg_type AS elem_t ON t.typlen = -1 AND t.typelem != 0 AND t.typelem = elem_t.oid
        LEFT JOIN pg_catalog.pg_range AS range_t ON t.oid = range_t.rngtypid
        LEFT JOIN pg_catalog.pg_range AS multirange_t ON t.oid = multirange_t.rngmultitypid
    )"""

#: The asked types ($1) and, at each depth below them, the types they are made of: an array's element, a range's
#: subtype, a domain's base, a composite's columns. Plan: each step an Index Scan using pg_type_oid_index.
INTROSPECTION = f"""
WITH RECURSIVE tree(oid, depth) AS (
    SELECT t.oid, 0 FROM pg_catalog.pg_type AS t WHERE t.oid = any($1::oid[])
    UNION ALL
    SELECT part.oid, tree.depth + 1
    FROM tree
    JOIN {_TYPEINFO} AS ti ON ti.oid = tree.oid
    CROSS JOIN LATERAL unnest(
        ARRAY[ti.elemtype, ti.range_subtype, ti.basetype] || coalesce(ti.attrtypoids, '{{}}'::oid[])) AS part(oid)
    WHERE part.oid IS NOT NULL AND part.oid <> 0
)
SELECT DISTINCT
    ti.oid, ti.ns, ti.name, ti.kind, ti.basetype, ti.elemtype, ti.elemdelim, ti.range_subtype, ti.attrtypoids,
    ti.attrnames, tree.depth,
    ti.basetype::regtype::text AS basetype_name,
    ti.elemtype::regtype::text AS elemtype_name,
    ti.range_subtype::regtype::text AS range_subtype_name
FROM tree JOIN {_TYPEINFO} AS ti ON ti.oid = tree.oid
ORDER BY tree.depth DESC"""


class Connection(asyncpg.Connection):
    """asyncpg's connection, introspecting types with `INTROSPECTION` (servers from Postgres 14 on: Skiplock's).
    `_intro_query` is asyncpg's own attribute for its query (`tests/integration/test_introspection.py` fails if a
    release of asyncpg renames it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.get_server_version() >= (14, 0):
            self._intro_query = INTROSPECTION
