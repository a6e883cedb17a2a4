"""The admin console's own checks, run by the test suite: TypeScript (strict), Biome and the vitest component tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

UI = Path(__file__).resolve().parents[2] / "admin-ui"


@pytest.fixture(scope="module")
def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        pytest.fail("npm is needed for the admin console's tests (Node 20+; `make ui` installs one into .venv)")
    subprocess.run([found, "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=UI, check=True)
    return found


def test_types_and_lint(npm: str) -> None:
    subprocess.run([npm, "run", "--silent", "check"], cwd=UI, check=True)


def test_component_tests(npm: str) -> None:
    subprocess.run([npm, "test", "--silent"], cwd=UI, check=True)
