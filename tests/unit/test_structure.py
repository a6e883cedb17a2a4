"""The structure has no import circle: among the server's, the bench's and the client's Python modules, and among
the console's TypeScript modules (a circle makes the order of initialisation matter and two modules one)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = {"mq": ROOT / "mq", "api": ROOT / "api", "workers": ROOT / "workers", "bench": ROOT / "bench"}
CLIENT = ROOT / "client" / "skiplock_client"
CONSOLE = ROOT / "admin-ui" / "src"


def _module(path: Path, base: Path, package: str) -> str:
    parts = [package, *path.relative_to(base).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _python_graph() -> dict[str, set[str]]:
    """Every module's imports of the others (TYPE_CHECKING and function-level imports included: a circle hidden
    from the interpreter is still one)."""
    sources = {**{name: (path, name) for name, path in PYTHON.items()}, "skiplock_client": (CLIENT, "skiplock_client")}
    modules: dict[str, Path] = {}
    for base, package in sources.values():
        for path in base.rglob("*.py"):
            modules[_module(path, base, package)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
                imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {m for m in imported if m in modules and m != name and not name.startswith(f"{m}.")}
    return graph


def _console_graph() -> dict[str, set[str]]:
    files = [p for p in CONSOLE.rglob("*.ts*") if ".test." not in p.name]
    known = {p.with_suffix(""): p for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        targets = set()
        for spec in re.findall(r"""(?:from|import)\s*\(?\s*["'](\.[^"']+)["']""", path.read_text()):
            target = (path.parent / spec).resolve()
            for candidate in (target, target / "index"):
                if candidate in known:
                    targets.add(str(candidate.relative_to(CONSOLE)))
        graph[str(path.with_suffix("").relative_to(CONSOLE))] = targets
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _shown(circles: Iterable[list[str]]) -> str:
    return "\n".join(" <-> ".join(c) for c in circles)


def test_the_python_modules_import_no_circle() -> None:
    graph = _python_graph()
    assert len(graph) > 100
    circles = _circles(graph)
    assert circles == [], _shown(circles)


def test_the_consoles_modules_import_no_circle() -> None:
    graph = _console_graph()
    assert len(graph) > 30
    circles = _circles(graph)
    assert circles == [], _shown(circles)


def test_the_wheel_ships_every_package() -> None:
    """A package missing from `[tool.setuptools] packages` is left out of the wheel and the image: the installed
    server would not start (the wheel's end-to-end test finds it, minutes later)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("mq", "api", "workers", "skiplock")
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert found - listed == set()
