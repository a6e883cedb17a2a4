"""The wiring, proven without a cluster: the image built here (tests/deploy/image.py), then exactly the commands,
arguments and environment that the chart's and compose's containers get, run on this machine against real Postgres
and Redis. The probes' paths and ports must answer 200, a message must go through, the metric names the chart's
autoscaler and alerts use must be ones /metrics serves, and queue-ti's gRPC service must answer on the port the
chart and compose give it, to a bearer token signed with the key from their Secret."""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import grpc
import httpx
import pytest
import yaml
from queueti.pb import queue_pb2, queue_pb2_grpc

from skiplock.local import free_port, redis_server_binary
from tests.deploy.image import Image
from tests.deploy.support import (
    Container,
    metric_names,
    render,
    run_to_completion,
    served_series,
    start_container,
    tool,
    wait_for_http,
)
from tests.support.servers import ROOT, database_url_on, scratch_dir
from tests.support.wheels import EMBEDDED_MODULES, importable

pytestmark = pytest.mark.slow


def grpc_round_trip(http_url: str, grpc_address: str, username: str, password: str, tenant: str = "default") -> None:
    """What a queue-ti client does: a bearer token from POST /api/auth/login, then one message enqueued, dequeued
    and acked over gRPC (queue-ti's own stubs, from its PyPI client); a call without the token is refused."""
    login = httpx.post(f"{http_url}/api/auth/login", json={"username": username, "password": password}, timeout=10)
    assert login.status_code == 200, login.text
    metadata = (("authorization", f"Bearer {login.json()['token']}"), ("x-tenant", tenant))
    with grpc.insecure_channel(grpc_address) as channel:
        stub = queue_pb2_grpc.QueueServiceStub(channel)
        sent = stub.Enqueue(
            queue_pb2.EnqueueRequest(topic="skiplock-grpc", payload=b"wired"), metadata=metadata, timeout=10
        )
        leased = stub.Dequeue(queue_pb2.DequeueRequest(topic="skiplock-grpc"), metadata=metadata, timeout=10)
        assert (leased.id, leased.payload) == (sent.id, b"wired")
        stub.Ack(queue_pb2.AckRequest(id=leased.id), metadata=metadata, timeout=10)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Enqueue(queue_pb2.EnqueueRequest(topic="skiplock-grpc", payload=b"x"), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def no_generated_token_key(image: Image) -> bool:
    """The key came from SKIPLOCK_TOKEN_SECRET: none was generated into the data folder (which a read-only root
    filesystem would refuse, and which no two pods share)."""
    return not list(image.workdir.rglob("token.key"))


def test_the_image_runs_each_role_and_writes_nothing(image: Image, empty_database: str, redis_url: str) -> None:
    assert image.user == "10001:10001" and image.exposed == [8080, 50051]
    assert image.env["SKIPLOCK_PORT"] == "8080" and image.env["SKIPLOCK_GRPC_PORT"] == "50051"
    assert image.entrypoint == ["skiplock"] and image.cmd == ["api"]
    # its virtualenv holds the runtime dependencies alone: no embedded Postgres or Redis (docs/deploy.md)
    assert importable(image.root / "opt" / "skiplock" / "bin" / "python", EMBEDDED_MODULES) == []
    before = image.files()
    env = {"SKIPLOCK_DATABASE_URL": empty_database, "SKIPLOCK_REDIS_URL": redis_url}
    # The image's API never migrates (SKIPLOCK_MIGRATE_ON_START=false): the migrate role does, then exits.
    run_to_completion(image, "migrate", image.argv(args=["migrate"]), env)
    port = free_port()
    password = secrets.token_hex(8)
    api = start_container(
        image,
        "api",
        image.argv(),
        # gRPC on a free port too: another server on this machine may hold 50051 (SO_REUSEPORT would share it).
        {
            **env,
            "SKIPLOCK_PORT": str(port),
            "SKIPLOCK_GRPC_PORT": str(free_port()),
            "SKIPLOCK_ADMIN_PASSWORD": password,
            # the API needs its token key from the environment: it cannot keep a generated one in the image
            "SKIPLOCK_TOKEN_SECRET": secrets.token_hex(32),
        },
    )
    worker = start_container(image, "worker", image.argv(args=["worker"]), env)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/readyz", api)
        assert image.healthy(port)
        console = httpx.get(f"http://127.0.0.1:{port}/")
        assert console.status_code == 200 and '<div id="root">' in console.text
        assert "content-security-policy" in console.headers
        smoke = run_to_completion(
            image,
            "smoke",
            image.argv(["python", "-m", "skiplock.smoke"], ["--url", f"http://127.0.0.1:{port}"]),
            {"SKIPLOCK_ADMIN_PASSWORD": password},
        )
        assert "enqueued, dequeued and acked" in smoke
        assert worker.process.poll() is None, worker.log()
    finally:
        assert api.stop() == 0, api.log()
        assert worker.stop() == 0, worker.log()
    assert not image.healthy(port)
    assert image.files() == before, "a role wrote into the image: a read-only root filesystem would break it"


# --- Helm -------------------------------------------------------------------------------------------------------


class Release:
    """A rendered release: its objects, and the environment each container would see."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects

    def get(self, kind: str, name: str) -> dict[str, Any]:
        [found] = [o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name]
        return found

    def container(self, kind: str, name: str) -> dict[str, Any]:
        spec = self.get(kind, name)["spec"]
        [container] = (spec["template"]["spec"] if kind in ("Deployment", "Job") else spec)["containers"]
        return container

    def env(self, container: dict[str, Any]) -> dict[str, str]:
        """envFrom ConfigMaps, then env: values and secretKeyRefs resolved from the rendered objects."""
        env: dict[str, str] = {}
        for source in container.get("envFrom", []):
            env.update(self.get("ConfigMap", source["configMapRef"]["name"])["data"])
        for item in container.get("env", []):
            if "value" in item:
                env[item["name"]] = item["value"]
                continue
            ref = item["valueFrom"]["secretKeyRef"]
            data = self.get("Secret", ref["name"])["data"]
            if ref["key"] in data:
                env[item["name"]] = base64.b64decode(data[ref["key"]]).decode()
            else:
                assert ref.get("optional"), f"{ref} is missing"
        return env


def test_the_charts_containers_run_as_rendered(image: Image, empty_database: str, redis_url: str) -> None:
    token = secrets.token_hex(8)
    admin_password = secrets.token_hex(8)
    release = Release(
        render(
            {
                "secrets": {
                    "databaseUrl": empty_database,
                    "redisUrl": redis_url,
                    "adminPassword": admin_password,
                    "metricsToken": token,
                },
                "config": {"gauges_interval_seconds": 1, "expiry_reaper_interval_seconds": 1},
                "autoscaling": {"enabled": True, "requestRate": {"enabled": True}, "queueDepth": {"enabled": True}},
                "metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
            }
        )
    )

    def run_spec(kind: str, name: str) -> tuple[list[str], dict[str, str]]:
        container = release.container(kind, name)
        assert container["image"] == "ghcr.io/skiplock/skiplock:0.1.0"
        return image.argv(container.get("command"), container.get("args")), release.env(container)

    # The hook first, as Helm runs it before anything else of the release.
    argv, env = run_spec("Job", "skiplock-migrate")
    run_to_completion(image, "migrate", argv, env)

    # The Deployments, each on a free port here: the container's port must be the one its process listens on.
    running: dict[str, tuple[Container, int]] = {}
    grpc_port = free_port()
    try:
        for name, variable in (("skiplock-api", "SKIPLOCK_PORT"), ("skiplock-worker", "SKIPLOCK_WORKER_PORT")):
            argv, env = run_spec("Deployment", name)
            port_specs = {p["name"]: p for p in release.container("Deployment", name)["ports"]}
            assert env[variable] == str(port_specs.pop("http")["containerPort"])
            port = free_port()
            env = {**env, variable: str(port)}
            if name == "skiplock-api":  # queue-ti's gRPC service, and the key that signs its tokens
                assert env["SKIPLOCK_GRPC_PORT"] == str(port_specs.pop("grpc")["containerPort"])
                assert len(env["SKIPLOCK_TOKEN_SECRET"]) == 64
                env["SKIPLOCK_GRPC_PORT"] = str(grpc_port)
            assert not port_specs, port_specs
            running[name] = (start_container(image, name, argv, env), port)
        for name, (container, port) in running.items():
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                get = release.container("Deployment", name)[probe]["httpGet"]
                assert get["port"] == "http"
                wait_for_http(f"http://127.0.0.1:{port}{get['path']}", container)
        api, api_port = running["skiplock-api"]

        # `helm test`: the test pod's command against the Service, which this machine's "DNS" maps to the API.
        test_container = release.container("Pod", "skiplock-test")
        service = release.get("Service", "skiplock")
        assert (
            service["spec"]["selector"].items()
            <= release.get("Deployment", "skiplock-api")["spec"]["template"]["metadata"]["labels"].items()
        )
        service_port = {p["name"]: p for p in service["spec"]["ports"]}["http"]
        assert service_port["targetPort"] == "http"
        cluster_url = f"http://{service['metadata']['name']}:{service_port['port']}"
        args = [f"http://127.0.0.1:{api_port}" if a == cluster_url else a for a in test_container["args"]]
        assert args != test_container["args"], "the test pod does not call the Service"
        smoke = run_to_completion(
            image, "test", image.argv(test_container["command"], args), release.env(test_container)
        )
        assert "enqueued, dequeued and acked" in smoke

        # A queue-ti client through the Service's grpc port, which targets the container's.
        grpc_service_port = {p["name"]: p for p in service["spec"]["ports"]}["grpc"]
        assert grpc_service_port["targetPort"] == "grpc" and grpc_service_port["appProtocol"] == "grpc"
        grpc_round_trip(f"http://127.0.0.1:{api_port}", f"127.0.0.1:{grpc_port}", "admin", admin_password)
        assert no_generated_token_key(image)

        # The ServiceMonitor's scrape of both Deployments, with the token from the Secret it names.
        [endpoint] = release.get("ServiceMonitor", "skiplock")["spec"]["endpoints"]
        credentials = endpoint["authorization"]["credentials"]
        bearer = base64.b64decode(release.get("Secret", credentials["name"])["data"][credentials["key"]]).decode()
        assert bearer == token and endpoint["port"] == "http"
        pages = {}
        for name, (container, port) in running.items():
            assert container.process.poll() is None, container.log()
            deadline = time.monotonic() + 30
            url = f"http://127.0.0.1:{port}{endpoint['path']}"
            while 'job="gauges"' not in (page := httpx.get(url, headers={"Authorization": f"Bearer {bearer}"})).text:
                assert time.monotonic() < deadline, f"{name}: no job ran:\n{page.text[-3000:]}\n{container.log()}"
                time.sleep(0.5)
            pages[name] = page.text
        assert 'skiplock_http_request_duration_seconds_count{method="POST"' in pages["skiplock-api"]
        assert "skiplock_messages_expired_total{" not in pages["skiplock-api"]  # the worker counts its jobs
        served = served_series(pages["skiplock-api"])
        hpa = release.get("HorizontalPodAutoscaler", "skiplock-api")["spec"]["metrics"]
        used = {m["pods"]["metric"]["name"] for m in hpa if m["type"] == "Pods"}
        used |= {m["external"]["metric"]["name"] for m in hpa if m["type"] == "External"}
        for group in release.get("PrometheusRule", "skiplock")["spec"]["groups"]:
            for rule in group["rules"]:
                used |= metric_names(rule["expr"])
        assert used and used <= served, used - served

        # preStop, then SIGTERM: the API stops within the grace period that is left; the worker within its own.
        pod = release.get("Deployment", "skiplock-api")["spec"]["template"]["spec"]
        pre_stop = release.container("Deployment", "skiplock-api")["lifecycle"]["preStop"]["exec"]["command"]
        started = time.monotonic()
        subprocess.run(pre_stop, check=True)
        assert api.stop(timeout=pod["terminationGracePeriodSeconds"] - (time.monotonic() - started)) == 0
        worker_pod = release.get("Deployment", "skiplock-worker")["spec"]["template"]["spec"]
        worker = running["skiplock-worker"][0]
        assert worker.stop(timeout=worker_pod["terminationGracePeriodSeconds"]) == 0, worker.log()
    finally:
        for container, _ in running.values():
            container.stop()


# --- docker-compose ---------------------------------------------------------------------------------------------


def _compose_config(env_file: Path, *options: str) -> dict[str, Any]:
    result = subprocess.run(
        [
            tool("docker-compose"),
            "--project-directory",
            ROOT,
            "-f",
            ROOT / "docker-compose.yml",
            "--env-file",
            env_file,
            *options,
            "config",
            "--format",
            "yaml",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def _on_this_machine(url: str, hosts: dict[str, str]) -> str:
    """A URL naming a compose service (postgres:5432), pointed at the server standing in for it here."""
    parts = urlsplit(url)
    userinfo, _, hostport = parts.netloc.rpartition("@")
    netloc = f"{userinfo}@{hosts[hostport]}" if userinfo else hosts[hostport]
    return urlunsplit(parts._replace(netloc=netloc))


async def test_the_compose_services_run_as_configured(image: Image, pg_server_url: str) -> None:
    work = scratch_dir("skiplock-compose-")
    env_file = work / ".env"
    env_file.write_text(
        "".join(
            f"{name}={secrets.token_hex(24)}\n"  # as .env.example generates them
            for name in (
                "POSTGRES_PASSWORD",
                "REDIS_PASSWORD",
                "SKIPLOCK_ADMIN_PASSWORD",
                "SKIPLOCK_METRICS_TOKEN",
                "SKIPLOCK_TOKEN_SECRET",
            )
        )
    )
    services = _compose_config(env_file)["services"]
    assert set(services) == {"postgres", "redis", "migrate", "api", "worker"}
    assert services["api"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["worker"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("migrate", "api", "worker"):
        assert services[name]["read_only"] is True and services[name]["cap_drop"] == ["ALL"]

    # Postgres: the service's user, password and database, on the test server (as the image's entrypoint would
    # create them on first start).
    pg = services["postgres"]["environment"]
    admin = await asyncpg.connect(database_url_on(pg_server_url, "postgres"))
    role = f"skiplock_compose_{os.urandom(3).hex()}"
    try:
        await admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{pg['POSTGRES_PASSWORD']}'")
        await admin.execute(f'CREATE DATABASE "{role}" OWNER {role}')
        server = urlsplit(database_url_on(pg_server_url, "postgres"))
        hosts = {"postgres:5432": f"{server.hostname}:{server.port}"}
        # Redis: the service's own command line (its password, its append-only file) with a real redis-server.
        redis_port = free_port()
        redis_argv = [
            str(redis_server_binary()),
            *services["redis"]["command"][1:],
            "--port",
            str(redis_port),
            "--dir",
            str(work),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ]
        redis = subprocess.Popen(redis_argv, stdout=subprocess.DEVNULL)
        hosts["redis:6379"] = f"127.0.0.1:{redis_port}"
        try:
            await _run_compose_services(image, services, hosts, role)
        finally:
            redis.terminate()
            redis.wait(10)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{role}" WITH (FORCE)')
        await admin.execute(f"DROP ROLE IF EXISTS {role}")
        await admin.close()


async def _run_compose_services(image: Image, services: dict[str, Any], hosts: dict[str, str], database: str) -> None:
    postgres = services["postgres"]["environment"]

    def spec(name: str) -> tuple[list[str], dict[str, str]]:
        service = services[name]
        env = {k: str(v) for k, v in service["environment"].items()}
        # The URL names the postgres service's user, password and database; here they are a role of the test's.
        url = urlsplit(env["SKIPLOCK_DATABASE_URL"])
        assert (url.username, url.password, url.path) == (
            postgres["POSTGRES_USER"],
            postgres["POSTGRES_PASSWORD"],
            f"/{postgres['POSTGRES_DB']}",
        )
        env["SKIPLOCK_DATABASE_URL"] = urlunsplit(
            url._replace(netloc=f"{database}:{url.password}@{url.hostname}:{url.port}", path=f"/{database}")
        )
        for key in ("SKIPLOCK_DATABASE_URL", "SKIPLOCK_REDIS_URL"):
            env[key] = _on_this_machine(env[key], hosts)
        return image.argv(service.get("entrypoint"), service.get("command")), env

    run_to_completion(image, "migrate", *spec("migrate"))
    argv, env = spec("api")
    # The published ports are the ones it listens on: HTTP, then queue-ti's gRPC service.
    published, published_grpc = services["api"]["ports"]
    assert str(published["target"]) == image.env["SKIPLOCK_PORT"]
    assert str(published_grpc["target"]) == env.get("SKIPLOCK_GRPC_PORT", image.env["SKIPLOCK_GRPC_PORT"])
    assert str(published_grpc["published"]) == "50051"
    assert len(env["SKIPLOCK_TOKEN_SECRET"]) >= 32  # from .env, like the other secrets
    assert "SKIPLOCK_TOKEN_SECRET" not in services["worker"]["environment"]
    port, grpc_port = free_port(), free_port()
    api = start_container(image, "api", argv, {**env, "SKIPLOCK_PORT": str(port), "SKIPLOCK_GRPC_PORT": str(grpc_port)})
    argv, worker_env = spec("worker")
    check = services["worker"]["healthcheck"]["test"]  # ["CMD", "python", "-m", "skiplock.healthcheck", "8081"]
    assert check[0] == "CMD" and check[-1] == worker_env["SKIPLOCK_WORKER_PORT"]
    worker_port = free_port()
    worker = start_container(image, "worker", argv, {**worker_env, "SKIPLOCK_WORKER_PORT": str(worker_port)})
    try:
        wait_for_http(f"http://127.0.0.1:{port}/readyz", api)
        assert image.healthy(port)  # the image's HEALTHCHECK, which the api service keeps
        wait_for_http(f"http://127.0.0.1:{worker_port}/readyz", worker)
        worker_check = subprocess.run(
            image.argv(check[1:2], [*check[2:-1], str(worker_port)]),
            cwd=image.workdir,
            env=image.environ(worker_env),
            check=False,
        )
        assert worker_check.returncode == 0  # the worker service's own health check
        smoke = run_to_completion(
            image,
            "smoke",
            image.argv(["python", "-m", "skiplock.smoke"], ["--url", f"http://127.0.0.1:{port}"]),
            {"SKIPLOCK_ADMIN_PASSWORD": env["SKIPLOCK_ADMIN_PASSWORD"]},
        )
        assert "enqueued, dequeued and acked" in smoke
        grpc_round_trip(f"http://127.0.0.1:{port}", f"127.0.0.1:{grpc_port}", "admin", env["SKIPLOCK_ADMIN_PASSWORD"])
        assert no_generated_token_key(image)
        metrics = httpx.get(
            f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {env['SKIPLOCK_METRICS_TOKEN']}"}
        )
        assert metrics.status_code == 200
        assert worker.process.poll() is None, worker.log()
    finally:
        assert api.stop() == 0, api.log()
        assert worker.stop() == 0, worker.log()


def test_the_citus_profile_is_a_cluster_the_migration_waits_for() -> None:
    """`docker compose --profile citus` (docs/scale-out.md): the database service is the coordinator (its image from
    SKIPLOCK_POSTGRES_IMAGE), two workers join it, a one-shot service registers them, and the migration, which
    distributes the tables, waits for it. Without the profile none of them is there, and the migration's wait for
    the registration is not required."""
    work = scratch_dir("skiplock-compose-citus-")
    env_file = work / ".env"
    names = ("POSTGRES_PASSWORD", "REDIS_PASSWORD", "SKIPLOCK_ADMIN_PASSWORD", "SKIPLOCK_METRICS_TOKEN")
    env = "".join(f"{name}={secrets.token_hex(24)}\n" for name in (*names, "SKIPLOCK_TOKEN_SECRET"))
    env_file.write_text(env + "SKIPLOCK_POSTGRES_IMAGE=citusdata/citus:13.0\n")
    services = _compose_config(env_file, "--profile", "citus")["services"]
    assert set(services) == {
        "postgres",
        "redis",
        "migrate",
        "api",
        "worker",
        "citus-worker-1",
        "citus-worker-2",
        "citus-nodes",
    }
    assert services["postgres"]["image"] == services["citus-worker-1"]["image"] == "citusdata/citus:13.0"
    password = services["postgres"]["environment"]["POSTGRES_PASSWORD"]
    for worker in ("citus-worker-1", "citus-worker-2"):
        assert services[worker]["environment"]["PGPASSWORD"] == password  # the nodes sign in to each other
        assert services["citus-nodes"]["depends_on"][worker]["condition"] == "service_healthy"
        assert f"--command=SELECT citus_add_node('{worker}', 5432)" in services["citus-nodes"]["command"]
    assert services["migrate"]["depends_on"]["citus-nodes"]["condition"] == "service_completed_successfully"
    plain = _compose_config(env_file)["services"]
    assert "citus-nodes" not in plain and plain["migrate"]["depends_on"]["citus-nodes"]["required"] is False


def test_a_real_docker_build_where_an_engine_answers() -> None:
    """Where a Docker engine answers, the Dockerfile is built for real (this machine has the client only: the
    image is then built by tests/deploy/image.py alone): its modules import, the embedded servers do not."""
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "info"], capture_output=True, check=False).returncode != 0:
        pytest.skip("no Docker engine answers here: the image is built step by step by tests/deploy/image.py")
    tag = f"skiplock-test:{secrets.token_hex(4)}"
    subprocess.run([docker, "build", "--quiet", "-t", tag, ROOT], check=True, capture_output=True)
    try:
        check = (
            "import importlib.util, sys; import api, mq, skiplock, workers; "
            "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))"
        )
        found = subprocess.run(
            [docker, "run", "--rm", "--entrypoint", "python", tag, "-c", check, *EMBEDDED_MODULES],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert found == []
    finally:
        subprocess.run([docker, "rmi", "-f", tag], capture_output=True, check=False)
