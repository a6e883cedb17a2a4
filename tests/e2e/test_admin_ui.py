"""The admin console, tested as it ships: TypeScript (strict), Biome and the vitest component tests; then the
production build served by a real Skiplock (real Postgres and Redis) and driven in the system Chromium by the
Playwright specs of `admin-ui/e2e` as each role, with axe-core on every page.

`make ui-screenshots` runs the browser tests with SKIPLOCK_SCREENSHOTS=docs/images to refresh the screenshots that
docs/admin-ui.md shows; the tests compare no pixels.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import ADMIN, Server, start_server, stop_server

UI = Path(__file__).resolve().parents[2] / "admin-ui"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))


@pytest.fixture(scope="module")
def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        pytest.fail("npm is needed for the admin console's tests (Node 20+; `make ui` installs one into .venv)")
    subprocess.run([found, "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=UI, check=True)
    return found


def test_types_and_lint(npm: str) -> None:
    subprocess.run([npm, "run", "--silent", "check"], cwd=UI, check=True)


def test_component_tests(npm: str) -> None:
    subprocess.run([npm, "test", "--silent"], cwd=UI, check=True)


@pytest.fixture(scope="module")
def console_server(npm: str, server_env: dict[str, str]) -> Iterator[Server]:
    """A server like `make run`'s (workers on: tenants' usage comes from the gauge job), serving a production build
    made for this run."""
    build = Path(tempfile.mkdtemp(prefix="skiplock-console-"))
    subprocess.run(
        [npm, "run", "--silent", "build", "--", "--outDir", str(build), "--logLevel", "error"], cwd=UI, check=True
    )
    srv = start_server(
        {
            **server_env,
            "SKIPLOCK_ADMIN_UI_DIR": str(build),
            "SKIPLOCK_RUN_WORKERS": "true",
            "SKIPLOCK_GAUGES_INTERVAL_SECONDS": "1",
        }
    )
    yield srv
    stop_server(srv)
    shutil.rmtree(build, ignore_errors=True)


# 39 specs, 3-17 s each on a loaded 2-core machine (4-5 minutes in all): above the suite's 300 s default, and below
# the subprocess' own bound, so that a hang still ends with Playwright's report.
@pytest.mark.timeout(720)
def test_every_page_and_action_in_chromium(npm: str, console_server: Server) -> None:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium")
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    env = {
        **os.environ,
        "SKIPLOCK_URL": console_server.base_url,
        "SKIPLOCK_ADMIN_USERNAME": ADMIN[0],
        "SKIPLOCK_ADMIN_PASSWORD": ADMIN[1],
        "CHROMIUM": str(CHROMIUM),
        "SKIPLOCK_E2E_OUTPUT": tempfile.mkdtemp(prefix="skiplock-e2e-"),
    }
    run = subprocess.run(
        # SKIPLOCK_E2E_SPECS: only these specs (say `e2e/schedules.spec.ts`), while working on them
        [npm, "exec", "--", "playwright", "test", *os.environ.get("SKIPLOCK_E2E_SPECS", "").split()],
        cwd=UI,
        env=env,
        capture_output=True,
        text=True,
        timeout=660,
        check=False,  # the assertion shows Playwright's report and the server's log
    )
    print(run.stdout[-12000:])  # each spec with its time (shown with -s)
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n--- server log ---\n{console_server.log()[-5000:]}"
