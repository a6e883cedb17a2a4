"""`python -m skiplock.healthcheck [PORT]`: the image's HEALTHCHECK. Exits 0 when this container's API (on
SKIPLOCK_PORT), or whatever serves PORT (the worker's SKIPLOCK_WORKER_PORT), answers `GET /healthz` with 200, else
1. Standard library only, so a check every 30 s costs a few milliseconds of CPU."""

from __future__ import annotations

import os
import sys
import urllib.request


def main(argv: list[str]) -> int:
    port = argv[0] if argv else os.environ.get("SKIPLOCK_PORT", "8080")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=3) as response:
            return 0 if response.status == 200 else 1
    except OSError:
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
