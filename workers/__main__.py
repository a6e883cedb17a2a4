"""`python -m workers` (`make worker`): the scheduled jobs without the HTTP API, for a separate deployment.

Needs `SKIPLOCK_DATABASE_URL` (and `SKIPLOCK_REDIS_URL` when the API has one): `make run` already runs the same
jobs inside its own process against its embedded servers. SIGTERM or Ctrl-C stops the scheduler, then the pools.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

import uvloop

from mq.logs import configure_logging
from mq.runtime import Runtime
from mq.settings import Settings, get_settings
from workers.scheduler import Workers

log = logging.getLogger("skiplock.workers")


async def run(settings: Settings) -> None:
    runtime = await Runtime.open(settings, bootstrap_users=False)
    workers = Workers(runtime.jobs)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await workers.start()
        await stop.wait()
    finally:
        workers.shutdown()
        await runtime.close()
        log.info("workers stopped")


def main() -> None:
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    if not settings.database_url:
        log.error(
            "SKIPLOCK_DATABASE_URL is not set: `make run` runs the workers itself; a separate worker needs the URL"
        )
        sys.exit(2)
    uvloop.run(run(settings))


if __name__ == "__main__":
    main()
