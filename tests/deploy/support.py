"""The deployment tests' helpers: the tools (`helm/tools.sh`), the chart rendered, the image built and run."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
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


def render(values: dict[str, Any] | None = None, *files: Path, release: str = "skiplock") -> list[dict[str, Any]]:
    """`helm template` of the chart with value files and a values mapping (applied last); the objects."""
    return [doc for doc in yaml.safe_load_all(helm_template(values, *files, release=release)) if doc]


def helm_template(values: dict[str, Any] | None, *files: Path, release: str = "skiplock") -> str:
    argv: list[str | Path] = [tool("helm"), "template", release, CHART, "--namespace", "queues"]
    for file in files:
        argv += ["-f", file]
    if values is not None:
        argv += ["-f", "-"]
    result = subprocess.run(argv, input=yaml.safe_dump(values or {}), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise HelmError(result.stderr)
    return result.stdout


class HelmError(Exception):
    """helm refused to render (a failed `required`, a value the schema refuses)."""


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
