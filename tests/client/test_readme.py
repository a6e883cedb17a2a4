"""client/README.md's quickstart, run as printed against a server with the default credentials and tenant."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.servers import ROOT, start_server, stop_server


def quickstart() -> str:
    text = (ROOT / "client" / "README.md").read_text()
    section = text[text.index("## Quickstart") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def test_the_client_quickstart_works_as_printed(server_env: dict[str, str]) -> None:
    env = {**server_env, "SKIPLOCK_ADMIN_USERNAME": "admin", "SKIPLOCK_ADMIN_PASSWORD": "skiplock-admin"}
    server = start_server({**env, "SKIPLOCK_DEFAULT_TENANT": "default"})
    try:
        run = subprocess.run(
            [sys.executable, "-c", quickstart()],
            check=False,
            capture_output=True,
            text=True,
            env={**os.environ, "SKIPLOCK_URL": server.base_url},
            timeout=120,
        )
    finally:
        stop_server(server)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["2500 sent", "2501 handled"], run.stdout
