"""A 3-master Redis Cluster on this machine, from Debian's redis-server (Redis 7), for the tests of Skiplock on a
cluster (`mq.redis_client`, docs/scale-out.md "Redis at that scale")."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.servers import SYSTEM_REDIS, free_port, scratch_dir

CLI = SYSTEM_REDIS.with_name("redis-cli")


@contextlib.contextmanager
def redis_cluster(masters: int = 3) -> Iterator[str | None]:
    """The cluster's URL (`redis+cluster://` and its nodes); None when redis-server is not installed."""
    if not SYSTEM_REDIS.exists() or not CLI.exists():
        yield None
        return
    base = scratch_dir("skiplock-redis-cluster-")
    ports = [_cluster_port() for _ in range(masters)]
    nodes = [_start(base, port) for port in ports]
    try:
        _create(ports)
        yield "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in ports)
    finally:
        for node in nodes:
            node.terminate()
        for node in nodes:
            node.wait(timeout=10)


def _cluster_port() -> int:
    """A free port whose cluster bus port (10,000 above it, so at most 55,535) is free too."""
    while True:
        port = free_port()
        if port <= 55_535 and _free(port + 10_000):
            return port


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _start(base: Path, port: int) -> subprocess.Popen[bytes]:
    folder = base / str(port)
    folder.mkdir()
    argv = [str(SYSTEM_REDIS), "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes"]
    argv += ["--cluster-config-file", str(folder / "nodes.conf"), "--dir", str(folder), "--save", ""]
    argv += ["--appendonly", "no", "--protected-mode", "no", "--logfile", str(folder / "log")]
    node = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while _cli(port, "ping") != "PONG":
        if time.monotonic() > deadline:
            raise RuntimeError(f"redis-server on {port} did not start")
        time.sleep(0.05)
    return node


def _create(ports: list[int]) -> None:
    addresses = [f"127.0.0.1:{port}" for port in ports]
    subprocess.run(
        [str(CLI), "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    deadline = time.monotonic() + 20
    while not all("cluster_state:ok" in _cli(port, "cluster", "info") for port in ports):
        if time.monotonic() > deadline:
            raise RuntimeError("the Redis cluster did not come up")
        time.sleep(0.1)


def _cli(port: int, *command: str) -> str:
    done = subprocess.run(
        [str(CLI), "-p", str(port), *command], check=False, capture_output=True, text=True, timeout=10
    )
    return done.stdout.strip()
