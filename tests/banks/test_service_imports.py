"""The write services import one way: no module of banks.services, portability.services or agents.services
(nor the pure modules they import from their own app) imports, even lazily inside a function, a module that
imports it back (a circle hides which layer owns what, and breaks on a reordering)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("banks", "portability", "agents")


def _modules() -> dict[str, Path]:
    """Every module of the three apps but their migrations and tests: a circle may pass through any of them."""
    found: dict[str, Path] = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    wanted: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(APPS):
            if node.module in modules:
                wanted.add(node.module)
            wanted.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules)
    return wanted


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    # A package's __init__ re-exports its own modules: not a circle of layers.
    return {name: {d for d in deps if not d.startswith(name + ".")} for name, deps in graph.items()}


def _services(circle: list[str]) -> bool:
    return any(".services" in name for name in circle)


def test_no_import_circle_among_the_write_services():
    assert [c for c in _circles(_graph()) if _services(c)] == []
