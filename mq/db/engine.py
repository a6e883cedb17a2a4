"""Connections: an asyncpg pool for the hot path, a SQLAlchemy engine for control-plane CRUD, and migrations."""

from __future__ import annotations

import asyncio
import importlib.resources
import logging
from collections.abc import Sequence
from typing import Any, TypeAlias

import asyncpg
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from mq.db import citus, introspection, routed, sql

log = logging.getLogger(__name__)

#: The Alembic scripts ship inside the package (the checkout's `migrations/` folder, installed as
#: `mq.db.migrations`), so an installed wheel or image migrates without the checkout.
MIGRATIONS_PACKAGE = "mq.db.migrations"

#: What the process holds, named here so that the code wiring it together (`mq.runtime`) imports no driver.
Pool: TypeAlias = "asyncpg.Pool[Any]"
Engine: TypeAlias = AsyncEngine
#: What a statement raises when Postgres refuses it or the connection to it fails: what a loop that must outlive a
#: database outage (a flush, a publish, a start-up probe) catches, logs and retries, without importing the driver.
DATABASE_ERRORS: tuple[type[Exception], ...] = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)


def asyncpg_dsn(url: str) -> str:
    """A libpq-style URL for asyncpg, whatever driver suffix the configured URL carries."""
    for prefix in ("postgresql+asyncpg://", "postgres+asyncpg://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


def sqlalchemy_url(url: str) -> str:
    """The same URL for SQLAlchemy's asyncpg dialect."""
    return "postgresql+asyncpg://" + asyncpg_dsn(url)[len("postgresql://") :]


async def _init_connection(conn: asyncpg.Connection[Any]) -> None:
    # Timestamps are compared with now() in SQL and rendered as UTC; never depend on the server's zone.
    await conn.execute("SET TIME ZONE 'UTC'")


async def _no_reset(conn: asyncpg.Connection[Any]) -> None:
    """Pool connections carry no session state (no SET, LISTEN, advisory locks or cursors outside a statement),
    so asyncpg's default reset on release (RESET ALL; UNLISTEN *; ...) would only add a round trip per request."""


async def create_pool(url: str, min_size: int, max_size: int, statement_timeout_seconds: float = 15) -> Pool:
    """The hot-path pool. Statements are prepared once per connection and cached by asyncpg. Postgres cancels a
    statement past `statement_timeout_seconds` (a lock held elsewhere, an overloaded server); the client gives up
    a little later, should the cancel itself not get through."""
    pool = await asyncpg.create_pool(
        asyncpg_dsn(url),
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        reset=_no_reset,
        statement_cache_size=256,
        max_inactive_connection_lifetime=300,
        command_timeout=statement_timeout_seconds + 5,
        timeout=10,  # connecting
        server_settings={"statement_timeout": str(int(statement_timeout_seconds * 1000))},
        connection_class=introspection.Connection,  # a new connection learns its types in ms, not seconds
    )
    assert pool is not None
    return pool


def create_engine(url: str, pool_size: int = 3) -> Engine:
    """The control-plane engine (users, tenants, configs): low traffic, a small pool."""
    return create_async_engine(
        sqlalchemy_url(url),
        pool_size=pool_size,
        max_overflow=2,
        pool_pre_ping=True,
        pool_timeout=10,
        connect_args={
            "server_settings": {"timezone": "UTC", "statement_timeout": "15000"},
            "timeout": 10,
            "connection_class": introspection.Connection,
        },
    )


def alembic_config(url: str) -> Config:
    """Alembic's configuration for the migrations shipped in the package, on `url`."""
    config = Config()
    config.set_main_option("script_location", str(importlib.resources.files(MIGRATIONS_PACKAGE)))
    config.set_main_option("path_separator", "os")
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


#: The revision of the migration the first ones were folded into (`migrations/versions/2026_11_28_baseline.py`),
#: which lists them (`FOLDED`).
BASELINE = "2026_11_28_versioned_functions"


class SchemaTooOld(Exception):
    """The database is at a revision of the migrations folded into the baseline: an older release migrates it first."""


def migrate(url: str, revision: str = "head", routed_forms: Sequence[routed.Routed | routed.Stepwise] = ()) -> None:
    """Run Alembic up to `revision`, then, on a Citus coordinator, distribute what is not yet (`distribute`) once the
    schema is the current one (an older one may not distribute: a trigger, a key without the tenant) (blocking: call
    before the event loop serves, or in a thread). `SchemaTooOld` when the database is at a folded revision."""
    config = alembic_config(url)
    scripts = ScriptDirectory.from_config(config)
    try:
        command.upgrade(config, revision)
    except CommandError as exc:
        old = next((name for name in _folded(scripts) if f"'{name}'" in str(exc)), None)
        if old is None:
            raise
        raise SchemaTooOld(_too_old(old)) from None
    if revision in ("head", scripts.get_current_head()):
        asyncio.run(distribute(url, routed_forms))


_CITUS_STATE = {
    "distributed": "SELECT logicalrelid::regclass::text, partmethod::text FROM pg_dist_partition",
    "foreign_keys": """
SELECT conrelid::regclass::text, conname, confrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint
WHERE contype = 'f' AND connamespace = 'public'::regnamespace AND conparentid = 0""",
    "distributed_functions": """
SELECT objid::regprocedure::text FROM pg_dist_object
WHERE classid = 'pg_proc'::regclass AND distribution_argument_index IS NOT NULL""",
    "functions": r"""
SELECT oid::regprocedure::text FROM pg_proc
WHERE pronamespace = 'public'::regnamespace AND proname LIKE 'skiplock\_%' AND prorettype <> 'trigger'::regtype""",
}


async def on_citus(pool: Pool) -> bool:
    """Whether the database is a Citus coordinator (its `citus` extension is there)."""
    return bool(await pool.fetchval(sql.ON_CITUS))


async def distribute(url: str, routed_forms: Sequence[routed.Routed | routed.Stepwise] = ()) -> list[str]:
    """On a Citus coordinator, finish the database's distribution (`mq.db.citus`); returns the statements run
    (none on plain Postgres, or once all is distributed)."""
    conn = await asyncpg.connect(asyncpg_dsn(url), timeout=10)
    try:
        if not await conn.fetchval(sql.ON_CITUS):
            return []
        made = await _create_routed(conn, routed_forms)
        q = _CITUS_STATE
        state = citus.State(
            distributed={r[0]: r[1] for r in await conn.fetch(q["distributed"])},
            foreign_keys=[citus.ForeignKey(*row) for row in await conn.fetch(q["foreign_keys"])],
            distributed_functions={r[0] for r in await conn.fetch(q["distributed_functions"])},
            functions=[r[0] for r in await conn.fetch(q["functions"])],
        )
        statements = citus.plan(state)
        for statement in statements:  # each its own transaction: a table is distributed whole, or not yet
            log.info("citus: %s", statement)
            await conn.execute(statement)
        return made + statements
    finally:
        await conn.close()


async def _create_routed(conn: asyncpg.Connection[Any], forms: Sequence[routed.Routed | routed.Stepwise]) -> list[str]:
    """The routed functions (`mq.db.routed`) among `forms` the database lacks, created (`citus.plan` distributes
    them then): the types of their arguments and answer read by preparing their statement, those of each INSERT's
    rows from its table, those of the steps a stepwise function passes between its parts by preparing a probe."""
    held = {r[0] for r in await conn.fetch(_ROUTED_HELD, routed.PREFIX.replace("_", r"\_") + "%")}
    made = []
    for form in forms:
        if form.function in held:
            continue
        prepared = await conn.prepare(form.statement.text)
        arguments = [await conn.fetchval(_TYPE_NAME, t.oid) for t in prepared.get_parameters()]
        answer = [(a.name, await conn.fetchval(_TYPE_NAME, a.type.oid)) for a in prepared.get_attributes()]
        if isinstance(form, routed.Stepwise):
            columns = {}
            for step in form.captured:
                probed = await conn.prepare(form.probe(step, arguments))
                columns[step] = [(a.name, await conn.fetchval(_TYPE_NAME, a.type.oid)) for a in probed.get_attributes()]
            ddl = form.ddl(arguments, answer, columns)
        else:
            sinks = [[await conn.fetchval(_COLUMN_TYPE, sink.table, c) for c in sink.columns] for sink in form.sinks]
            ddl = form.ddl(arguments, answer, sinks)
        log.info("citus: %s for %s", form.function, form.statement.name)
        await conn.execute(ddl)
        made.append(ddl)
    return made


_ROUTED_HELD = "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND proname LIKE $1"
_TYPE_NAME = "SELECT format_type($1::oid, NULL)"
_COLUMN_TYPE = """
SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2"""


def _folded(scripts: ScriptDirectory) -> tuple[str, ...]:
    """The revisions folded into the baseline (`FOLDED` of its migration)."""
    folded: tuple[str, ...] = scripts.get_revision(BASELINE).module.FOLDED
    return folded


def _too_old(revision: str) -> str:
    return (
        f"the database's schema is at revision {revision}, one of the migrations this release folded into one "
        f"({BASELINE}): migrate it first with a release from before the fold (up to commit d870528, "
        "`skiplock migrate`), then with this one (docs/deploy.md, Upgrade stops)"
    )


async def schema_revision(url: str) -> str | None:
    """The Alembic revision the database is at; None when it has no Skiplock schema."""
    conn = await asyncpg.connect(asyncpg_dsn(url), timeout=10)
    try:
        if await conn.fetchval("SELECT to_regclass('alembic_version')") is None:
            return None
        revision: str | None = await conn.fetchval("SELECT version_num FROM alembic_version")
        return revision
    finally:
        await conn.close()


def schema_problem(url: str, revision: str | None) -> str | None:
    """Why this release cannot serve on a database at `revision`, or None. A database a later release already
    migrated is fine: each release's migrations keep the previous release working (docs/deploy.md, Upgrades)."""
    scripts = ScriptDirectory.from_config(alembic_config(url))
    head = scripts.get_current_head()
    if revision is None:
        return "the database has no Skiplock schema: run `skiplock migrate` first"
    if revision in _folded(scripts):
        return _too_old(revision)
    if revision != head and revision in {script.revision for script in scripts.walk_revisions()}:
        return (
            f"the database's schema is at revision {revision} and this release needs {head}: run `skiplock migrate`"
            " first (the Helm chart's hook and compose's migrate service do)"
        )
    return None
