"""The deployment tests' helpers: the tools (`helm/tools.sh`), the chart rendered, the image built and run."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.deploy.image import Image, build
from tests.support.servers import ROOT, scratch_dir

CHART = ROOT / "helm" / "skiplock"
TOOLS = Path(os.environ.get("DEPLOY_TOOLS", ROOT / ".venv" / "deploy-tools")) / "bin"


def tool(name: str) -> Path:
    """A deployment tool; `make test` installs them first. Outside CI a missing tool skips, in CI it fails."""
    path = TOOLS / name
    if not path.exists():
        message = f"{path} is missing: `make test` (or `bash helm/tools.sh`) installs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def render(
    values: dict[str, Any] | None = None,
    *files: Path,
    release: str = "skiplock",
    helm: str = "helm",
    cluster: FakeCluster | None = None,
) -> list[dict[str, Any]]:
    """`helm template` of the chart with value files and a values mapping (applied last); the objects. With a
    cluster, helm renders as an install or upgrade would (`--dry-run=server`): `lookup` reads the cluster."""
    text = helm_template(values, *files, release=release, helm=helm, cluster=cluster)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def helm_template(
    values: dict[str, Any] | None,
    *files: Path,
    release: str = "skiplock",
    helm: str = "helm",
    cluster: FakeCluster | None = None,
) -> str:
    argv: list[str | Path] = [tool(helm), "template", release, CHART, "--namespace", "queues"]
    env = None
    if cluster is not None:
        argv += ["--dry-run=server", "--disable-openapi-validation"]
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    for file in files:
        argv += ["-f", file]
    if values is not None:
        argv += ["-f", "-"]
    result = subprocess.run(
        argv, input=yaml.safe_dump(values or {}), capture_output=True, text=True, check=False, env=env
    )
    if result.returncode != 0:
        raise HelmError(result.stderr)
    return result.stdout


class HelmError(Exception):
    """helm refused to render (a failed `required`, a value the schema refuses)."""


#: The API groups the chart's objects belong to, with their resources: what helm discovers before it renders
#: against a cluster (`--dry-run=server`).
_RESOURCES = {
    "v1": {"Secret": "secrets", "ConfigMap": "configmaps", "Service": "services", "ServiceAccount": "serviceaccounts"},
    "apps/v1": {"Deployment": "deployments"},
    "batch/v1": {"Job": "jobs"},
    "policy/v1": {"PodDisruptionBudget": "poddisruptionbudgets"},
    "networking.k8s.io/v1": {"NetworkPolicy": "networkpolicies", "Ingress": "ingresses"},
    "autoscaling/v2": {"HorizontalPodAutoscaler": "horizontalpodautoscalers"},
    "monitoring.coreos.com/v1": {"ServiceMonitor": "servicemonitors", "PrometheusRule": "prometheusrules"},
}


class FakeCluster:
    """A Kubernetes API server that answers what `helm template --dry-run=server` asks (version, discovery, a GET
    per object) from the objects put in it: enough for the chart's `lookup` to find what an earlier release
    created, without a cluster."""

    def __init__(self, workdir: Path) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (resource, namespace, name)
        self.requests: list[str] = []
        cluster = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                cluster.requests.append(self.path)
                status, body = cluster.answer(self.path.partition("?")[0])
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.kubeconfig = workdir / "kubeconfig"
        self.kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "fake", "cluster": {"server": f"http://127.0.0.1:{self.server.server_port}"}}
                    ],
                    "users": [{"name": "fake", "user": {}}],
                    "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
                    "current-context": "fake",
                }
            )
        )

    def __enter__(self) -> FakeCluster:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def apply(self, obj: dict[str, Any], release: str = "skiplock") -> None:
        """Store an object as `helm install` would have left it (with the release's ownership metadata)."""
        meta = obj["metadata"]
        obj = {
            **obj,
            "metadata": {
                **meta,
                "annotations": {
                    **meta.get("annotations", {}),
                    "meta.helm.sh/release-name": release,
                    "meta.helm.sh/release-namespace": meta["namespace"],
                },
            },
        }
        resource = _RESOURCES[obj["apiVersion"]][obj["kind"]]
        self.objects[resource, meta["namespace"], meta["name"]] = obj

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        not_found = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
        if path == "/version":
            return 200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"}
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            groups = [
                {
                    "name": group_version.split("/")[0],
                    "versions": [{"groupVersion": group_version, "version": group_version.split("/")[1]}],
                    "preferredVersion": {"groupVersion": group_version, "version": group_version.split("/")[1]},
                }
                for group_version in _RESOURCES
                if "/" in group_version
            ]
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        group_version = "v1" if path == "/api/v1" else path.removeprefix("/apis/")
        if group_version in _RESOURCES:
            resources = [
                {"name": name, "singularName": kind.lower(), "namespaced": True, "kind": kind, "verbs": ["get"]}
                for kind, name in _RESOURCES[group_version].items()
            ]
            return 200, {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}
        parts = path.strip("/").split("/")
        if len(parts) >= 6 and parts[-4] == "namespaces":
            found = self.objects.get((parts[-2], parts[-3], parts[-1]))
            if found is not None:
                return 200, found
        return 404, not_found


@pytest.fixture(scope="session")
def image() -> Iterator[Image]:
    """The Dockerfile built here (tests/deploy/image.py), once per session."""
    workspace = scratch_dir("skiplock-image-")
    yield build(workspace)
    subprocess.run(["rm", "-rf", workspace], check=False)


@dataclass
class Container:
    """A container's process on this machine."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 40) -> int:
        """SIGTERM, as the kubelet and compose send it; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                raise
        return self.process.returncode


def start_container(image: Image, name: str, argv: list[str], env: dict[str, str]) -> Container:
    log_path = scratch_dir("skiplock-container-") / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv, cwd=image.workdir, env=image.environ(env), stdout=log, stderr=subprocess.STDOUT
        )
    return Container(name, process, log_path)


def run_to_completion(image: Image, name: str, argv: list[str], env: dict[str, str], timeout: float = 120) -> str:
    """A one-shot container (the migration, a test pod): its log, after it exited 0."""
    container = start_container(image, name, argv, env)
    try:
        code = container.process.wait(timeout)
    except subprocess.TimeoutExpired:
        container.process.kill()
        raise
    assert code == 0, f"{name} exited with {code}:\n{container.log()}"
    return container.log()


def wait_for_http(url: str, container: Container, timeout: float = 60, headers: dict[str, str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert container.process.poll() is None, f"{container.name} exited:\n{container.log()}"
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2, headers=headers).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer 200 within {timeout}s:\n{container.log()}")


def served_series(metrics_text: str) -> set[str]:
    """The series names a /metrics page serves (from its TYPE lines: a histogram serves _count, _sum, _bucket)."""
    suffixes = {"histogram": ["_count", "_sum", "_bucket"]}
    names = set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            if kind == "counter":
                names.add(name if name.endswith("_total") else f"{name}_total")
            names.update(name + suffix for suffix in suffixes.get(kind, [""]))
    return names


def metric_names(promql: str) -> set[str]:
    """The skiplock_* series an expression reads."""
    return set(re.findall(r"\bskiplock_[a-z_]+\b", promql))
