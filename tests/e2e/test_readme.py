"""The README's quickstart, run with bash exactly as printed, against a server with the default credentials."""

from __future__ import annotations

import re
import subprocess

from tests.support.servers import ROOT, start_server, stop_server


def quickstart() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Quickstart") :]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def test_readme_quickstart_works_as_printed(server_env: dict[str, str]) -> None:
    env = {
        **server_env,
        "SKIPLOCK_ADMIN_USERNAME": "admin",
        "SKIPLOCK_ADMIN_PASSWORD": "skiplock-admin",
        "SKIPLOCK_DEFAULT_TENANT": "default",
    }
    server = start_server(env)
    try:
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", quickstart()],
            check=False,
            capture_output=True,
            text=True,
            env={"SKIPLOCK": server.base_url, "PATH": "/usr/bin:/bin:/usr/local/bin"},
            timeout=60,
        )
    finally:
        stop_server(server)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert '"status":"processing"' in out and '"receipt":' in out
    assert "\n204\n" in out  # the ack
    assert re.findall(r'"outcome":"(\w+)"', out) == ["retry", "retry", "dlq"]

    assert '"topic":"orders.dlq"' in out
    assert '{"requeued":1}' in out
    assert out.count('"payload":"aW52b2ljZS03"') == 2  # enqueued once, received by each of the two groups
    assert '"items":["billing","audit"]' in out
    long_poll, config = out.rstrip().rsplit("\n", 1)
    assert long_poll.endswith("]}")  # the long poll answered with the requeued message
    assert '"max_depth":10000' in config and '"retry_backoff_seconds":[1,5,30]' in config
