"""A Citus worker node of a test's own, beside the cluster of `../shared/citus` (its Postgres 15 and Citus): started
for one test's database, stopped and started again by the test (a worker's failure), removed afterwards. The
cluster's own workers are shared by every test session; a node the test owns can fail without failing the others.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.servers import free_port

PGBIN = Path(os.environ.get("PGBIN", "/usr/lib/postgresql/15/bin"))


@dataclass
class Node:
    host: str
    port: int
    data: Path

    def _pg_ctl(self, *args: str) -> None:
        _as_postgres([str(PGBIN / "pg_ctl"), "-D", str(self.data), "-w", "-t", "30", *args])

    def start(self) -> None:
        self._pg_ctl("-l", str(self.data / "log"), "start")

    def stop(self) -> None:
        """As a crash would: immediately, no shutdown checkpoint."""
        self._pg_ctl("-m", "immediate", "stop")


def available() -> bool:
    """Whether this machine can run a node: the Postgres 15 binaries, and Citus installed into them."""
    return (PGBIN / "initdb").exists() and Path("/usr/share/postgresql/15/extension/citus.control").exists()


@contextlib.contextmanager
def citus_node() -> Iterator[Node]:
    """A new Citus node on a free port (trust auth, fsync off, as the cluster's), running; removed afterwards. Its
    commits are synchronous, as a production server's: the drills stop it as a crash would (`-m immediate`), and an
    asynchronous commit answered before its WAL was written is lost then (an insert committed on the worker alone,
    as a delegated function's, was: 2 messages answered 201 gone; two-phase commits flush anyway)."""
    base = Path(tempfile.mkdtemp(prefix="skiplock-citus-node-"))
    shutil.chown(base, "postgres")
    node = Node("127.0.0.1", free_port(), base / "data")
    _as_postgres([str(PGBIN / "initdb"), "-D", str(node.data), "-U", "postgres", "--auth=trust", "--no-sync"])
    with (node.data / "postgresql.conf").open("a") as conf:
        conf.write(
            f"port = {node.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{base}'\n"
            "shared_preload_libraries = 'citus'\nmax_connections = 100\nfsync = off\nsynchronous_commit = on\n"
            "full_page_writes = off\n"
        )
    node.start()
    try:
        yield node
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            node.stop()
        shutil.rmtree(base, ignore_errors=True)


def _as_postgres(argv: list[str]) -> None:
    """Postgres refuses to run as root: the node's commands run as the `postgres` user when the tests are root."""
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "postgres", "--", *argv]
    subprocess.run(argv, check=True, capture_output=True, timeout=60)
