"""The schema's one way in: Alembic's migrations, then, on a Citus coordinator, the distribution, with the routed
functions of the data plane's statements (`mq.db.routed`). `mq.db.engine` does both; this module is where the
statements are known, above the queue (the engine, below it, knows none of them).
"""

from __future__ import annotations

from mq.db import engine, routed
from mq.queue.sql import dequeue, insert, settle  # noqa: F401  (their statements make their routed forms when imported)


def migrate(url: str, revision: str = "head") -> None:
    """`mq.db.engine.migrate`, with every routed form (blocking: call before the event loop serves, or in a
    thread)."""
    engine.migrate(url, revision, list(routed.ROUTED.values()))


async def distribute(url: str) -> list[str]:
    """`mq.db.engine.distribute`, with every routed form: the statements run to finish a Citus database's
    distribution (none on plain Postgres, or once all is distributed)."""
    return await engine.distribute(url, list(routed.ROUTED.values()))
