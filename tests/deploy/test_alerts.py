"""The chart's alerts fire when they should and stay quiet when they should not: `promtool test rules` (Prometheus'
own rule evaluator, Debian's `prometheus` package) over series a problem would produce, and the same series healthy.

Each case names an alert, the series Prometheus would scrape (promtool's expanding notation: `1+0x30` is 1 for 30
samples), the time it is evaluated at, and the labels it fires with ([] when it must not fire). The annotations are
the rule's own with their `$labels` filled in, so a changed description needs no change here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.support import render

PROMTOOL = shutil.which("promtool")
REQUIRED = {"secrets": {"databaseUrl": "postgresql://a:b@db/s", "redisUrl": "redis://r:6379/0", "adminPassword": "pw"}}

# (alert, input series, eval time, the labels of each alert expected to fire)
CASES: list[tuple[str, list[tuple[str, str]], str, list[dict[str, str]]]] = [
    (
        "SkiplockDependencyDown",
        [
            ('skiplock_dependency_up{dependency="redis", pod="api-1"}', "1 0x10"),
            ('skiplock_dependency_up{dependency="redis", pod="api-2"}', "1x10"),
            ('skiplock_dependency_up{dependency="postgres", pod="api-1"}', "1x10"),
        ],
        "5m",
        [{"dependency": "redis", "severity": "critical"}],
    ),
    ("SkiplockDependencyDown", [('skiplock_dependency_up{dependency="redis"}', "1x10")], "5m", []),
    (
        "SkiplockLongPollsStarved",
        [
            ('skiplock_oldest_pending_age_seconds{tenant="acme", topic="orders"}', "100+60x10"),
            ('skiplock_long_polls_waiting{tenant="acme", topic="orders", pod="api-1"}', "3x10"),
            ('skiplock_oldest_pending_age_seconds{tenant="acme", topic="idle"}', "100+60x10"),
        ],
        "8m",
        [{"tenant": "acme", "topic": "orders", "severity": "warning"}],  # nobody waits on `idle`: not starved
    ),
    (
        "SkiplockLongPollsStarved",
        [
            ('skiplock_oldest_pending_age_seconds{tenant="acme", topic="orders"}', "2x10"),
            ('skiplock_long_polls_waiting{tenant="acme", topic="orders"}', "3x10"),
        ],
        "8m",
        [],
    ),
    (
        "SkiplockScheduleFailing",
        [
            ('skiplock_schedule_ticks_refused_total{tenant="acme", topic="reports", reason="queue_full"}', "0+1x90"),
            ('skiplock_schedule_ticks_refused_total{tenant="acme", topic="mixed", reason="queue_full"}', "0+1x90"),
            ('skiplock_schedule_ticks_total{tenant="acme", topic="mixed"}', "0+1x90"),
        ],
        "80m",
        [{"tenant": "acme", "topic": "reports", "severity": "warning"}],  # `mixed` still enqueues some ticks
    ),
    (
        "SkiplockTenantAtQuota",
        [
            ('skiplock_http_refusals_total{tenant="acme", code="quota_exceeded"}', "0+5x40"),
            ('skiplock_http_refusals_total{tenant="calm", code="not_found"}', "0+5x40"),
        ],
        "30m",
        [{"tenant": "acme", "severity": "warning"}],
    ),
    (
        "SkiplockDatabaseConnectionsHigh",
        [("skiplock_db_server_connections", "90x20"), ("skiplock_db_server_max_connections", "97x20")],
        "10m",
        [{"severity": "warning"}],
    ),
    (
        "SkiplockDatabaseConnectionsHigh",
        [("skiplock_db_server_connections", "40x20"), ("skiplock_db_server_max_connections", "97x20")],
        "10m",
        [],
    ),
    (
        "SkiplockDeadLettersGrowing",
        [('skiplock_messages{tenant="acme", topic="orders.dlq", status="pending"}', "90+2x90")],
        "80m",
        [{"tenant": "acme", "topic": "orders.dlq", "severity": "warning"}],
    ),
    (
        "SkiplockDeadLettersGrowing",  # many, but no longer growing: SkiplockDeadLetters says so, not this
        [('skiplock_messages{tenant="acme", topic="orders.dlq", status="pending"}', "500x90")],
        "80m",
        [],
    ),
    (
        "SkiplockConsumerGroupLagging",
        [
            (
                'skiplock_group_oldest_pending_age_seconds{tenant="acme", topic="orders", consumer_group="billing"}',
                "400+60x20",
            ),
            (
                'skiplock_group_oldest_pending_age_seconds{tenant="acme", topic="orders", consumer_group="audit"}',
                "5x20",
            ),
        ],
        "10m",
        [{"tenant": "acme", "topic": "orders", "consumer_group": "billing", "severity": "warning"}],
    ),
    (
        "SkiplockGaugesStale",
        [('skiplock_job_last_run_timestamp_seconds{job="gauges"}', "0x20")],
        "10m",
        [{"severity": "warning"}],
    ),
]


def _filled(text: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m[1]], text)


def test_the_alerts_fire_on_a_problem_and_stay_quiet_without_one(tmp_path: Path) -> None:
    if PROMTOOL is None:
        pytest.fail("no promtool: apt-get install prometheus (.ci/run installs it)")
    values = {**REQUIRED, "metrics": {"prometheusRule": {"enabled": True}}}
    [rule] = [o for o in render(values) if o["kind"] == "PrometheusRule"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    by_name = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    tests: list[dict[str, Any]] = []
    for alert, series, at, firing in CASES:
        annotations = by_name[alert]["annotations"]
        expected = [
            {"exp_labels": labels, "exp_annotations": {k: _filled(v, labels) for k, v in annotations.items()}}
            for labels in firing
        ]
        tests.append(
            {
                "interval": "1m",
                "input_series": [{"series": name, "values": samples} for name, samples in series],
                "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": expected}],
            }
        )
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": tests}))
    done = subprocess.run(
        [str(PROMTOOL), "test", "rules", "tests.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
