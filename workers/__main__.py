"""`python -m workers` (`skiplock worker`, `make worker`): the scheduled jobs without the HTTP API, for a separate
deployment.

Needs `SKIPLOCK_DATABASE_URL` (and `SKIPLOCK_REDIS_URL` when the API has one): `make run` already runs the same
jobs inside its own process against its embedded servers. SIGTERM or Ctrl-C stops the scheduler, then the pools.
"""

from __future__ import annotations

import logging
import sys

import uvloop

from mq.logs import configure_logging
from mq.settings import get_settings
from workers.scheduler import run_alone

log = logging.getLogger("skiplock.workers")


def main() -> None:
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    if not settings.database_url:
        log.error(
            "SKIPLOCK_DATABASE_URL is not set: `make run` runs the workers itself; a separate worker needs the URL"
        )
        sys.exit(2)
    uvloop.run(run_alone(settings))


if __name__ == "__main__":
    main()
