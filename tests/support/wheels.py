"""Skiplock as a wheel in a virtualenv of its own, as an operator or the image installs it. No network here: its
dependencies come from the test environment's site-packages (added by path after the new environment's own), while
Skiplock's modules come from the wheel."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path


def build_wheel(source: Path, dist: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", dist, source],
        check=True,
    )
    [wheel] = dist.glob("skiplock-*.whl")
    return wheel


def install_into(venv: Path, wheel: Path) -> Path:
    """Install `wheel` into `venv` (created without pip when missing); its python."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--quiet",
            "--force-reinstall",
            "--no-deps",
            "--no-compile",
            wheel,
        ],
        check=True,
    )
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python
