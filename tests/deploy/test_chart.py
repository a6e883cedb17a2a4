"""The chart's unit tests: assertions over `helm template` output (helm-unittest's job, in pytest). Each toggle
renders what it should; names and labels are stable; every container is locked down; the migration hook needs
nothing the release creates after it."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from promql_parser import parse as parse_promql

from tests.deploy.support import CHART, FakeCluster, HelmError, render, tool
from tests.deploy.values_schema import config_schema

REQUIRED = {
    "secrets": {
        "databaseUrl": "postgresql://skiplock:pw@db:5432/skiplock",
        "redisUrl": "redis://redis:6379/0",
        "adminPassword": "a-password",
    }
}
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))


def merged(*layers: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            result[key] = merged(result[key], value) if isinstance(value, dict) and key in result else value
    return result


def by_kind(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


def pod_specs(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    specs = {}
    for o in objects:
        if o["kind"] in ("Deployment", "Job"):
            specs[o["metadata"]["name"]] = o["spec"]["template"]["spec"]
        elif o["kind"] == "Pod":
            specs[o["metadata"]["name"]] = o["spec"]
    return specs


def hook(o: dict[str, Any]) -> str | None:
    return o["metadata"].get("annotations", {}).get("helm.sh/hook")


def test_defaults_render_these_objects_with_stable_names() -> None:
    names = sorted((o["kind"], o["metadata"]["name"], hook(o)) for o in render(REQUIRED))
    assert names == [
        ("ConfigMap", "skiplock", None),
        ("Deployment", "skiplock-api", None),
        ("Deployment", "skiplock-worker", None),
        ("Job", "skiplock-migrate", "pre-install,pre-upgrade"),
        ("Pod", "skiplock-test", "test"),
        ("PodDisruptionBudget", "skiplock-api", None),
        ("Secret", "skiplock", None),
        ("Secret", "skiplock-migrate", "pre-install,pre-upgrade"),
        ("Secret", "skiplock-tokens", None),
        ("Service", "skiplock", None),
        ("Service", "skiplock-worker", None),
        ("ServiceAccount", "skiplock", None),
    ]
    other_release = {o["metadata"]["name"] for o in render(REQUIRED, release="orders")}
    assert "orders-skiplock-api" in other_release
    long = {o["metadata"]["name"] for o in render(REQUIRED, release="a" * 53)}
    assert all(len(name) <= 63 for name in long), long


@pytest.mark.parametrize("values_file", CI_VALUES, ids=lambda p: p.name)
def test_every_object_has_the_standard_labels_and_selectors_match(values_file: Any) -> None:
    for o in render(None, values_file):
        labels = o["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "skiplock"
        assert labels["app.kubernetes.io/instance"] == "skiplock"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["helm.sh/chart"] == "skiplock-0.1.0"
        dashboard = o["kind"] == "ConfigMap" and o["metadata"]["name"] == "skiplock-dashboard"
        assert o["metadata"]["namespace"] == (
            "monitoring" if dashboard and "production" in values_file.name else "queues"
        )
        if o["kind"] in ("Deployment", "PodDisruptionBudget"):
            selector = o["spec"]["selector"]["matchLabels"]
            assert selector["app.kubernetes.io/component"] in ("api", "worker")
            if o["kind"] == "Deployment":
                assert selector.items() <= o["spec"]["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize("values_file", CI_VALUES, ids=lambda p: p.name)
def test_every_container_is_locked_down(values_file: Any) -> None:
    for name, spec in pod_specs(render(None, values_file)).items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["capabilities"] == {"drop": ["ALL"]}, name
            assert security["runAsUser"] >= 10000, name
            assert container["resources"]["limits"]["memory"], name
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"], name  # the one writable place


def test_api_probes_and_graceful_termination() -> None:
    objects = by_kind(render(REQUIRED))
    spec = objects["Deployment", "skiplock-api"]["spec"]["template"]["spec"]
    [api] = spec["containers"]
    assert api["args"] == ["api"]
    assert api["ports"] == [
        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
        {"name": "grpc", "containerPort": 50051, "protocol": "TCP"},
    ]
    assert api["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert api["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert api["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert api["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", "5"]
    # The preStop pause, then the server's own drain (25 s, long polls answered at once): all inside the grace.
    assert spec["terminationGracePeriodSeconds"] > 5 + 25
    assert objects["Deployment", "skiplock-api"]["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    spread = spec["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    assert all(c["whenUnsatisfiable"] == "ScheduleAnyway" for c in spread)
    assert objects["Service", "skiplock"]["spec"]["ports"][0]["targetPort"] == "http"


def test_the_grpc_port_on_the_pods_the_service_and_the_network_policy() -> None:
    """queue-ti's gRPC service: a container port `grpc` that SKIPLOCK_GRPC_PORT names, a Service port with
    `appProtocol: grpc`, and the NetworkPolicy's ingress open to it like the HTTP port; off, all of it goes."""
    policy = {"networkPolicy": {"enabled": True}}
    for grpc, service_port, container_port in (({}, 50051, 50051), ({"port": 9090}, 443, 9090)):
        values = merged(REQUIRED, policy, {"grpc": grpc, "service": {"grpcPort": service_port}})
        objects = by_kind(render(values))
        [api] = objects["Deployment", "skiplock-api"]["spec"]["template"]["spec"]["containers"]
        assert {"name": "grpc", "containerPort": container_port, "protocol": "TCP"} in api["ports"]
        assert objects["ConfigMap", "skiplock"]["data"]["SKIPLOCK_GRPC_PORT"] == str(container_port)
        ports = {p["name"]: p for p in objects["Service", "skiplock"]["spec"]["ports"]}
        assert ports["grpc"] == {
            "name": "grpc",
            "port": service_port,
            "targetPort": "grpc",
            "protocol": "TCP",
            "appProtocol": "grpc",
        }
        assert ports["http"]["targetPort"] == "http"
        [rule] = objects["NetworkPolicy", "skiplock-ingress"]["spec"]["ingress"]
        assert {"port": container_port, "protocol": "TCP"} in rule["ports"]
        # The worker serves no gRPC; the probes stay on HTTP (one process serves both).
        [worker] = objects["Deployment", "skiplock-worker"]["spec"]["template"]["spec"]["containers"]
        assert [p["name"] for p in worker["ports"]] == ["http"]
        assert all(
            api[probe]["httpGet"]["port"] == "http" for probe in ("startupProbe", "livenessProbe", "readinessProbe")
        )

    objects = by_kind(render(merged(REQUIRED, policy, {"grpc": {"enabled": False}})))
    [api] = objects["Deployment", "skiplock-api"]["spec"]["template"]["spec"]["containers"]
    assert [p["name"] for p in api["ports"]] == ["http"]
    assert objects["ConfigMap", "skiplock"]["data"]["SKIPLOCK_GRPC_PORT"] == "0"
    assert [p["name"] for p in objects["Service", "skiplock"]["spec"]["ports"]] == ["http"]
    [rule] = objects["NetworkPolicy", "skiplock-ingress"]["spec"]["ingress"]
    assert 50051 not in [p["port"] for p in rule["ports"]]
    with pytest.raises(HelmError, match=r"grpc\.port must differ from api\.port"):
        render(merged(REQUIRED, {"grpc": {"port": 8080}}))


def _token_key(objects: list[dict[str, Any]], name: str = "skiplock-tokens", key: str = "token-secret") -> str:
    secret = by_kind(objects)["Secret", name]
    assert "helm.sh/hook" not in secret["metadata"].get("annotations", {})  # an object of the release, kept
    return base64.b64decode(secret["data"][key]).decode()


def test_the_token_key_comes_from_a_secret_only_the_api_reads() -> None:
    objects = render(REQUIRED)
    key = _token_key(objects)
    assert re.fullmatch(r"[A-Za-z0-9]{64}", key)
    for name, spec in pod_specs(objects).items():
        refs = {
            e["name"]: e["valueFrom"]["secretKeyRef"]
            for c in spec["containers"]
            for e in c.get("env", [])
            if "valueFrom" in e
        }
        if name == "skiplock-api":
            assert refs["SKIPLOCK_TOKEN_SECRET"] == {"name": "skiplock-tokens", "key": "token-secret"}
        else:
            assert "SKIPLOCK_TOKEN_SECRET" not in refs, name
    config = by_kind(objects)["ConfigMap", "skiplock"]["data"]
    assert "SKIPLOCK_TOKEN_SECRET" not in config
    # Never a plain value: not in `config` (the ConfigMap), and `auth` takes a Secret's name only.
    with pytest.raises(HelmError, match="token_secret"):
        render(merged(REQUIRED, {"config": {"token_secret": "x" * 64}}))
    with pytest.raises(HelmError, match="value"):
        render(merged(REQUIRED, {"auth": {"tokenSecret": {"value": "x" * 64}}}))
    # The lifetime is a setting like any other.
    ttl = by_kind(render(merged(REQUIRED, {"config": {"token_ttl_seconds": 600}})))["ConfigMap", "skiplock"]["data"]
    assert ttl["SKIPLOCK_TOKEN_TTL_SECONDS"] == "600"

    # A Secret of yours: the chart makes none and the API reads yours, whichever Secret holds the others.
    for secrets in (REQUIRED["secrets"], {"existingSecret": "skiplock-credentials"}):
        values = {"secrets": secrets, "auth": {"tokenSecret": {"existingSecret": "skiplock-jwt", "key": "hs256"}}}
        objects = render(values)
        assert ("Secret", "skiplock-tokens") not in by_kind(objects)
        [api] = pod_specs(objects)["skiplock-api"]["containers"]
        [ref] = [e["valueFrom"]["secretKeyRef"] for e in api["env"] if e["name"] == "SKIPLOCK_TOKEN_SECRET"]
        assert ref == {"name": "skiplock-jwt", "key": "hs256"}


def test_the_token_key_is_generated_on_install_and_kept_on_upgrades(tmp_path: Path) -> None:
    """`lookup` against a cluster (a fake API server, helm 4 and helm 3 rendering as install and upgrade do): a
    new key on install, the Secret's key on every upgrade, whatever else changed; a new one if the key's name
    changed. Without a cluster (`helm template`, client dry runs) each rendering makes a new key."""
    assert _token_key(render(REQUIRED)) != _token_key(render(REQUIRED))
    for helm in ("helm", "helm3"):
        (tmp_path / helm).mkdir()
        with FakeCluster(tmp_path / helm) as cluster:
            installed = render(REQUIRED, helm=helm, cluster=cluster)
            key = _token_key(installed)
            assert _token_key(render(REQUIRED, helm=helm, cluster=cluster)) != key  # nothing to find yet
            assert any(
                path.startswith("/api/v1/namespaces/queues/secrets/skiplock-tokens") for path in cluster.requests
            )
            for o in installed:
                if o["kind"] in ("Secret", "ConfigMap", "Service", "Deployment") and not hook(o):
                    cluster.apply(o)
            for change in ({}, {"api": {"replicaCount": 4}, "config": {"token_ttl_seconds": 300}}):
                upgraded = render(merged(REQUIRED, change), helm=helm, cluster=cluster)
                assert _token_key(upgraded) == key, helm
            renamed = merged(REQUIRED, {"auth": {"tokenSecret": {"key": "signing-key"}}})
            assert _token_key(render(renamed, helm=helm, cluster=cluster), key="signing-key") != key


def test_worker_probes_and_its_headless_service() -> None:
    objects = by_kind(render(REQUIRED))
    [worker] = objects["Deployment", "skiplock-worker"]["spec"]["template"]["spec"]["containers"]
    assert worker["args"] == ["worker"]
    assert worker["ports"] == [{"name": "http", "containerPort": 8081, "protocol": "TCP"}]
    assert objects["ConfigMap", "skiplock"]["data"]["SKIPLOCK_WORKER_PORT"] == "8081"
    for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert worker[probe]["httpGet"] == {"path": path, "port": "http"}
    service = objects["Service", "skiplock-worker"]["spec"]
    assert service["clusterIP"] == "None" and service["ports"][0]["targetPort"] == "http"
    assert service["selector"]["app.kubernetes.io/component"] == "worker"


def test_the_config_map_carries_settings_and_the_chart_decides_the_deployment_ones() -> None:
    values = merged(
        REQUIRED,
        {
            "config": {
                "max_payload_bytes": 1048576,
                "retry_backoff_seconds": [1, 5, 30],
                "auth_cache_ttl_seconds": 0.5,
                "expire_to_dlq": True,
            }
        },
    )
    data = by_kind(render(values))["ConfigMap", "skiplock"]["data"]
    assert data["SKIPLOCK_MAX_PAYLOAD_BYTES"] == "1048576"  # not 1.048576e+06
    assert json.loads(data["SKIPLOCK_RETRY_BACKOFF_SECONDS"]) == [1, 5, 30]
    assert data["SKIPLOCK_AUTH_CACHE_TTL_SECONDS"] == "0.5"
    assert data["SKIPLOCK_EXPIRE_TO_DLQ"] == "true"
    assert data["SKIPLOCK_MIGRATE_ON_START"] == "false"
    assert data["SKIPLOCK_RUN_WORKERS"] == "false"  # the worker Deployment runs the jobs
    assert data["SKIPLOCK_PORT"] == "8080"
    assert data["SKIPLOCK_GRPC_PORT"] == "50051"
    assert data["SKIPLOCK_API_INSTANCES"] == "2"
    assert not any("PASSWORD" in key or "URL" in key or "TOKEN" in key for key in data)
    alone = by_kind(render(merged(values, {"worker": {"enabled": False}})))
    assert alone["ConfigMap", "skiplock"]["data"]["SKIPLOCK_RUN_WORKERS"] == "true"
    assert ("Deployment", "skiplock-worker") not in alone


def test_required_secrets_and_misspelt_values_are_refused() -> None:
    with pytest.raises(HelmError, match=r"set secrets\.databaseUrl"):
        render({})
    with pytest.raises(HelmError, match="visiblity"):
        render(merged(REQUIRED, {"config": {"visiblity_timeout_seconds": 5}}))
    with pytest.raises(HelmError, match="port"):
        render(merged(REQUIRED, {"config": {"port": 9000}}))  # the chart's to set
    with pytest.raises(HelmError, match="grpc_port"):
        render(merged(REQUIRED, {"config": {"grpc_port": 9000}}))  # grpc.port and grpc.enabled
    with pytest.raises(HelmError, match="autoscaling needs a metric"):
        render(merged(REQUIRED, {"autoscaling": {"enabled": True, "targetCPUUtilizationPercentage": 0}}))
    with pytest.raises(HelmError, match="serviceMonitor needs"):
        render(merged(REQUIRED, {"metrics": {"serviceMonitor": {"enabled": True}}}))


def test_the_migration_hook_needs_nothing_the_release_creates_after_it() -> None:
    """The classic deadlock: a pre-install Job waiting for a Secret, ConfigMap or ServiceAccount that Helm (or Argo
    CD's PreSync) only creates after the hooks. Every object the Job names must be a hook of the same events with a
    lower weight, or exist before the release (existingSecret)."""
    for values in (REQUIRED, {"secrets": {"existingSecret": "mine"}}):
        objects = render(values)
        [job] = [o for o in objects if o["kind"] == "Job"]
        annotations = job["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
        assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
        spec = job["spec"]
        assert spec["backoffLimit"] >= 1 and spec["activeDeadlineSeconds"] > 0 and spec["ttlSecondsAfterFinished"] >= 60
        pod = spec["template"]["spec"]
        assert "serviceAccountName" not in pod  # the chart's account is created with the release
        [container] = pod["containers"]
        assert container["args"] == ["migrate"]
        assert "envFrom" not in container
        named = {e["valueFrom"]["secretKeyRef"]["name"] for e in container["env"] if "valueFrom" in e}
        hooks = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret" and hook(o)}
        for name in named:
            if name == values["secrets"].get("existingSecret"):
                continue
            secret = hooks[name]
            assert secret["metadata"]["annotations"]["helm.sh/hook"] == annotations["helm.sh/hook"]
            assert int(secret["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(
                annotations["helm.sh/hook-weight"]
            )
            assert "hook-succeeded" in secret["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
    assert not [o for o in render(merged(REQUIRED, {"migration": {"enabled": False}})) if o["kind"] == "Job"]


def test_existing_secret_replaces_the_charts_secret_everywhere() -> None:
    objects = render({"secrets": {"existingSecret": "skiplock-credentials", "keys": {"databaseUrl": "uri"}}})
    # The token key is generated, not given: its Secret stays the chart's (auth.tokenSecret.existingSecret for yours).
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Secret"] == ["skiplock-tokens"]
    for name, spec in pod_specs(objects).items():
        refs = [
            e["valueFrom"]["secretKeyRef"]
            for c in spec["containers"]
            for e in c.get("env", [])
            if "valueFrom" in e and e["name"] != "SKIPLOCK_TOKEN_SECRET"
        ]
        assert refs and all(ref["name"] == "skiplock-credentials" for ref in refs), name
        assert all(
            ref["key"] == "uri" for ref in refs if ref["key"] not in ("redis-url", "admin-password", "metrics-token")
        ), name


def test_least_secrets_per_container() -> None:
    specs = pod_specs(render(merged(REQUIRED, {"secrets": {"metricsToken": "t"}})))

    def variables(pod: str) -> set[str]:
        return {e["name"] for c in specs[pod]["containers"] for e in c.get("env", [])}

    assert variables("skiplock-api") == {
        "SKIPLOCK_DATABASE_URL",
        "SKIPLOCK_REDIS_URL",
        "SKIPLOCK_ADMIN_PASSWORD",
        "SKIPLOCK_METRICS_TOKEN",
        "SKIPLOCK_TOKEN_SECRET",
    }
    assert variables("skiplock-worker") == {"SKIPLOCK_DATABASE_URL", "SKIPLOCK_REDIS_URL", "SKIPLOCK_METRICS_TOKEN"}
    assert variables("skiplock-migrate") == {"SKIPLOCK_DATABASE_URL", "SKIPLOCK_LOG_LEVEL", "SKIPLOCK_LOG_FORMAT"}
    assert variables("skiplock-test") == {"SKIPLOCK_ADMIN_PASSWORD"}


def test_ingress_with_tls() -> None:
    values = merged(
        REQUIRED,
        {
            "ingress": {
                "enabled": True,
                "className": "nginx",
                "hosts": [{"host": "q.example.com", "paths": [{"path": "/", "pathType": "Prefix"}]}],
                "tls": [{"secretName": "q-tls", "hosts": ["q.example.com"]}],
            }
        },
    )
    ingress = by_kind(render(values))["Ingress", "skiplock"]
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"secretName": "q-tls", "hosts": ["q.example.com"]}]
    [path] = ingress["spec"]["rules"][0]["http"]["paths"]
    assert path["backend"]["service"] == {"name": "skiplock", "port": {"name": "http"}}


def test_autoscaling_takes_over_the_replica_count() -> None:
    values = merged(
        REQUIRED,
        {
            "autoscaling": {
                "enabled": True,
                "minReplicas": 3,
                "maxReplicas": 9,
                "requestRate": {"enabled": True},
                "queueDepth": {"enabled": True},
            }
        },
    )
    objects = by_kind(render(values))
    assert "replicas" not in objects["Deployment", "skiplock-api"]["spec"]
    hpa = objects["HorizontalPodAutoscaler", "skiplock-api"]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "skiplock-api"}
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (3, 9)
    assert [m["type"] for m in hpa["metrics"]] == ["Resource", "Pods", "External"]
    assert objects["ConfigMap", "skiplock"]["data"]["SKIPLOCK_API_INSTANCES"] == "3"
    # tests/deploy/test_wiring.py checks that these names are ones /metrics serves.
    assert hpa["metrics"][1]["pods"]["metric"]["name"] == "skiplock_http_request_duration_seconds_count"
    assert hpa["metrics"][2]["external"]["metric"]["name"] == "skiplock_messages"


def test_monitoring_objects_and_alert_expressions_parse() -> None:
    values = merged(
        REQUIRED,
        {
            "secrets": {"metricsToken": "t"},
            "metrics": {
                "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                "prometheusRule": {"enabled": True},
            },
        },
    )
    objects = by_kind(render(values))
    monitor = objects["ServiceMonitor", "skiplock"]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "http" and endpoint["path"] == "/metrics"
    assert endpoint["authorization"]["credentials"] == {"name": "skiplock", "key": "metrics-token"}
    assert monitor["spec"]["selector"]["matchExpressions"] == [
        {"key": "app.kubernetes.io/component", "operator": "In", "values": ["api", "worker"]}
    ]
    rules = objects["PrometheusRule", "skiplock"]["spec"]["groups"][0]["rules"]
    assert {r["alert"] for r in rules} == {
        "SkiplockQueueGrowing",
        "SkiplockConsumersStalled",
        "SkiplockConsumerGroupLagging",
        "SkiplockDeadLetters",
        "SkiplockReaperLate",
        "SkiplockGaugesStale",
        "SkiplockRejecting",
        "SkiplockServerErrors",
        "SkiplockLongPollsStarved",
        "SkiplockDeadLettersGrowing",
        "SkiplockScheduleFailing",
        "SkiplockTenantAtQuota",
        "SkiplockDependencyDown",
        "SkiplockDatabaseConnectionsHigh",
    }
    for rule in rules:
        parse_promql(rule["expr"])  # raises on a syntax error (tests/integration/test_dashboard.py checks the names)
        assert rule["labels"]["severity"] in ("info", "warning", "critical")
        assert rule["annotations"]["summary"]
        assert rule["annotations"]["runbook_url"] == (
            f"https://github.com/skiplock/skiplock/blob/main/docs/runbooks/{rule['alert']}.md"
        )
    own = by_kind(
        render(merged(values, {"metrics": {"prometheusRule": {"runbookBaseUrl": "https://wiki.example/rb/"}}}))
    )
    for rule in own["PrometheusRule", "skiplock"]["spec"]["groups"][0]["rules"]:
        assert rule["annotations"]["runbook_url"] == f"https://wiki.example/rb/{rule['alert']}.md"
    assert ("ConfigMap", "skiplock-dashboard") not in objects  # off unless asked


def test_the_grafana_dashboard_for_the_sidecar() -> None:
    values = merged(
        REQUIRED,
        {"metrics": {"grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "Queues"}}}},
    )
    dashboard = by_kind(render(values))["ConfigMap", "skiplock-dashboard"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["annotations"] == {"grafana_folder": "Queues"}
    assert dashboard["metadata"]["namespace"] == "queues"
    shipped = (CHART / "dashboards" / "skiplock.json").read_text()
    assert json.loads(dashboard["data"]["skiplock.json"]) == json.loads(shipped)  # the file, byte for byte in JSON
    board = json.loads(shipped)
    assert board["uid"] == "skiplock-overview"
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource", "tenant", "topic"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            parse_promql(target["expr"].replace("$__rate_interval", "5m"))
    other = by_kind(render(merged(values, {"metrics": {"grafanaDashboard": {"namespace": "grafana"}}})))
    assert other["ConfigMap", "skiplock-dashboard"]["metadata"]["namespace"] == "grafana"


def test_network_policies() -> None:
    values = merged(
        REQUIRED,
        {
            "networkPolicy": {
                "enabled": True,
                "ingressFrom": [
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
                ],
            }
        },
    )
    objects = by_kind(render(values))
    everyone = objects["NetworkPolicy", "skiplock"]["spec"]
    assert everyone["policyTypes"] == ["Ingress", "Egress"] and everyone["ingress"] == []
    assert "app.kubernetes.io/component" not in everyone["podSelector"]["matchLabels"]  # every pod of the release
    ports = [p["port"] for rule in everyone["egress"] for p in rule.get("ports", [])]
    assert {53, 5432, 6379, 8080} <= set(ports)
    served = objects["NetworkPolicy", "skiplock-ingress"]["spec"]
    assert served["podSelector"]["matchExpressions"][0]["values"] == ["api", "worker"]
    assert served["ingress"][0]["ports"] == [
        {"port": 8080, "protocol": "TCP"},
        {"port": 50051, "protocol": "TCP"},
        {"port": 8081, "protocol": "TCP"},
    ]
    assert served["ingress"][0]["from"][0]["namespaceSelector"]


def test_image_by_digest() -> None:
    digest = "sha256:" + "a" * 64
    specs = pod_specs(render(merged(REQUIRED, {"image": {"repository": "r.example/skiplock", "digest": digest}})))
    assert {c["image"] for s in specs.values() for c in s["containers"]} == {f"r.example/skiplock@{digest}"}
    specs = pod_specs(render(REQUIRED))
    assert {c["image"] for s in specs.values() for c in s["containers"]} == {"ghcr.io/skiplock/skiplock:0.1.0"}


def test_the_schema_covers_every_value_and_every_setting() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["properties"]["config"] == config_schema(), "run `python -m tests.deploy.values_schema`"

    def walk(values: dict[str, Any], node: dict[str, Any], path: str) -> None:
        for key, value in values.items():
            assert key in node.get("properties", {}), f"{path}{key} is not in values.schema.json"
            child = node["properties"][key]
            if isinstance(value, dict) and "properties" in child:
                walk(value, child, f"{path}{key}.")

    walk(yaml.safe_load((CHART / "values.yaml").read_text()), schema, "")
    for values_file in CI_VALUES:
        walk(yaml.safe_load(values_file.read_text()), schema, f"{values_file.name}: ")


def test_notes_say_how_to_reach_it_and_log_in() -> None:
    def notes(*values_file: Any) -> str:
        argv = [tool("helm"), "install", "skiplock", CHART, "--namespace", "queues", "--dry-run=client"]
        for file in values_file:
            argv += ["-f", file]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        return out[out.index("NOTES:") :]

    default = notes(CHART / "ci" / "default-values.yaml")
    assert "port-forward service/skiplock 8080:8080 50051:50051" in default
    assert "skiplock.queues.svc:50051" in default and "Secret\nskiplock-tokens (key token-secret)" in default
    assert "get secret skiplock -o jsonpath='{.data.admin-password}'" in default
    assert "helm test skiplock --namespace queues" in default
    production = notes(CHART / "ci" / "production-values.yaml")
    assert "https://queues.example.com/" in production and "secret skiplock-credentials" in production
