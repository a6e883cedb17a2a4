"""The image, built without a Docker engine: the Dockerfile read instruction by instruction, each stage in a folder
of its own, the build context filtered by .dockerignore, every COPY done as written and every RUN mapped to what
it does here. Dependencies come from the test environment (no network for pip), the console's npm packages from
admin-ui/node_modules. A RUN this module does not know fails the build, so a Dockerfile change is noticed.

What comes out (`Image`) runs the image's entrypoint and commands with its environment, its working directory
and its health check, as compose and the chart would run them in a container.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.servers import ROOT
from tests.support.wheels import build_wheel, install_into

DOCKERFILE = ROOT / "Dockerfile"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order; comments dropped, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    result = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            result.append((word.upper(), " ".join(rest.split())))
    return result


def context_files() -> list[str]:
    """The build context: the checkout's files (not those git ignores) that .dockerignore lets through (the last
    matching rule wins)."""
    rules = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            rules.append((line.startswith("!"), line.lstrip("!").rstrip("/")))
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    kept = []
    for path in filter(None, tracked.split("\0")):
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        included = True
        for negated, pattern in rules:
            bare = pattern.removeprefix("**/")
            matches = any(fnmatch.fnmatch(p, pattern) for p in prefixes) or (
                pattern.startswith("**/") and any(fnmatch.fnmatch(part, bare) for part in parts)
            )
            if matches:
                included = negated
        if included and (ROOT / path).is_file():
            kept.append(path)
    return kept


@dataclass
class Stage:
    name: str
    root: Path
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)

    def path(self, container_path: str) -> Path:
        absolute = container_path if container_path.startswith("/") else f"{self.workdir.rstrip('/')}/{container_path}"
        return self.root / absolute.lstrip("/")


@dataclass
class Image:
    root: Path
    workdir: Path
    env: dict[str, str]
    entrypoint: list[str]
    cmd: list[str]
    healthcheck: list[str]
    user: str
    exposed: list[int]

    def argv(self, command: list[str] | None = None, args: list[str] | None = None) -> list[str]:
        """What a container runs: Kubernetes' `command` replaces the entrypoint, `args` (or compose's `command`)
        the CMD."""
        argv = [*(command if command is not None else self.entrypoint), *(args if args is not None else self.cmd)]
        if command is not None and args is None:
            argv = list(command)
        executable = shutil.which(argv[0], path=self.env["PATH"])
        assert executable, f"{argv[0]} is not on the image's PATH"
        return [executable, *argv[1:]]

    def environ(self, container_env: dict[str, str]) -> dict[str, str]:
        """The image's environment under the container's, as the runtime merges them."""
        return {**self.env, "HOME": "/nonexistent", **container_env}

    def healthy(self, port: int) -> bool:
        """The image's HEALTHCHECK command, run for an API on `port`."""
        check = subprocess.run(
            self.argv(self.healthcheck[:1], self.healthcheck[1:]),
            cwd=self.workdir,
            env=self.environ({"SKIPLOCK_PORT": str(port)}),
            check=False,
        )
        return check.returncode == 0

    def files(self) -> dict[str, float]:
        """Every file under the image's root with its modification time: to show a run wrote nothing there."""
        return {str(p): p.stat().st_mtime for p in self.root.rglob("*") if p.is_file() or p.is_symlink()}


def _json_or_shell(arguments: str) -> list[str]:
    return json.loads(arguments) if arguments.startswith("[") else ["/bin/sh", "-c", arguments]


def _copy(source: Path, target: Path, into_dir: bool) -> None:
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)
    else:
        destination = target / source.name if into_dir else target
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)


def _run(stage: Stage, command: str) -> None:
    """A RUN instruction, mapped to what it does on this machine."""
    if re.fullmatch(r"npm install .*", command):
        # The npm packages are the checkout's (installed as admin-ui/build.sh does), linked rather than fetched.
        modules = ROOT / "admin-ui" / "node_modules"
        if not modules.is_dir():
            subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=modules.parent, check=True
            )
        stage.path("node_modules").symlink_to(modules)
    elif command == "npm run --silent build":
        subprocess.run(["npm", "run", "--silent", "build"], cwd=stage.path("."), check=True)
    elif match := re.fullmatch(r"python -m venv (\S+)", command):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", stage.path(match[1])], check=True)
    elif match := re.fullmatch(
        r"(\S+)/bin/pip install --no-compile \. && \1/bin/python -m compileall -q \1/lib", command
    ):
        # Skiplock from the stage's sources (what its COPYs put there), its dependencies from the test environment.
        venv = stage.path(match[1])
        python = install_into(venv, build_wheel(stage.path("."), stage.root / "wheels"))
        subprocess.run([python, "-m", "compileall", "-q", venv / "lib"], check=True)
    elif command.startswith("groupadd "):
        pass  # the user exists to be named by USER; processes here run as the test's user
    else:
        raise AssertionError(f"tests/deploy/image.py does not know how to RUN {command!r}: teach it")


def build(workspace: Path) -> Image:
    """Build the Dockerfile's stages under `workspace`; the last stage is the image."""
    context = context_files()
    args: dict[str, str] = {}
    stages: dict[str, Stage] = {}
    stage: Stage | None = None
    image = Image(workspace, workspace, {}, [], [], [], "root", [])
    for word, arguments in instructions(DOCKERFILE.read_text()):
        if word == "ARG":
            name, _, default = arguments.partition("=")
            args.setdefault(name, default)
            continue
        if word == "FROM":
            name = arguments.split(" AS ")[-1] if " AS " in arguments else f"stage{len(stages)}"
            stage = Stage(name, workspace / name)
            stage.root.mkdir(parents=True)
            stages[name] = stage
            image = Image(stage.root, stage.root, {"PATH": "/usr/local/bin:/usr/bin:/bin"}, [], [], [], "root", [])
            continue
        assert stage is not None, f"{word} before FROM"
        if word == "WORKDIR":
            stage.workdir = arguments
            stage.path(".").mkdir(parents=True, exist_ok=True)
        elif word == "COPY":
            parts = arguments.split()
            source_stage = None
            if parts[0].startswith("--from="):
                source_stage = stages[parts.pop(0).removeprefix("--from=")]
            *sources, target = parts
            for source in sources:
                if source_stage is not None:
                    _copy(source_stage.path(source), stage.path(target), into_dir=False)
                    # In an image both stages' paths are the same; here the scripts' shebangs must follow the copy.
                    for script in stage.path(target).glob("bin/*"):
                        if script.is_file() and not script.is_symlink() and script.read_bytes()[:2] == b"#!":
                            script.write_text(script.read_text().replace(str(source_stage.root), str(stage.root)))
                    continue
                selected = [f for f in context if f == source or f.startswith(source.rstrip("/") + "/")]
                assert selected, f"COPY {source}: nothing in the build context (.dockerignore?)"
                for name in selected:
                    relative = name[len(source.rstrip("/")) + 1 :] if name != source else None
                    if relative is None:
                        _copy(ROOT / name, stage.path(target), into_dir=target.endswith("/"))
                    else:
                        destination = stage.path(target) / relative
                        destination.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(ROOT / name, destination)
        elif word == "RUN":
            _run(stage, arguments)
        elif word == "ENV":
            known = {**image.env, **stage.env}
            for pair in shlex.split(arguments):
                name, _, value = pair.partition("=")
                stage.env[name] = re.sub(r"\$\{?(\w+)\}?", lambda m: known.get(m[1], ""), value)  # noqa: B023
        elif word == "USER":
            image.user = arguments
        elif word == "EXPOSE":
            image.exposed = [int(p.split("/")[0]) for p in arguments.split()]
        elif word == "ENTRYPOINT":
            image.entrypoint = _json_or_shell(arguments)
        elif word == "CMD":
            image.cmd = _json_or_shell(arguments)
        elif word == "HEALTHCHECK":
            image.healthcheck = _json_or_shell(arguments.split(" CMD ", 1)[1])
        elif word != "LABEL":
            raise AssertionError(f"tests/deploy/image.py does not know the instruction {word}")
    assert stage is not None
    # The image's paths point into its folder here: /opt/skiplock/bin on PATH is <root>/opt/skiplock/bin.
    env = {**image.env, **stage.env}
    image.env = {k: re.sub(r"(?<![\w/])/opt/", f"{stage.root}/opt/", v) for k, v in env.items()}
    image.env["PATH"] = ":".join(
        [*(p for p in image.env["PATH"].split(":") if p.startswith(str(stage.root))), os.environ["PATH"]]
    )
    image.root = stage.root
    image.workdir = stage.path(".")
    return image
