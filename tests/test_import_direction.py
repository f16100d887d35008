"""Imports run one way (docs/architecture.md, "The layers"): the kernel imports no app, banks imports none
of the apps built on it, nothing but the composition root imports ``config``, and inside banks a write
service never imports an interface, a read never imports a write, a model or pure rule neither.
Lazy imports inside functions count: they are arrows too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ("memoryhub", "banks", "portability", "agents", "curation", "config")
BANKS_INTERFACES = ("banks.api", "banks.admin", "banks.management", "banks.tasks")


def _forbidden(module: str) -> tuple[str, ...]:
    """The packages ``module`` must not import."""
    if module.startswith("memoryhub"):
        return APPS[1:]
    rules: tuple[str, ...] = () if module.startswith("config") else ("config",)
    if module.startswith("banks"):
        rules += ("portability", "agents", "curation")
        if not module.startswith(BANKS_INTERFACES):
            rules += BANKS_INTERFACES
            if not module.startswith("banks.services"):
                rules += ("banks.services",)
                if not module.startswith("banks.selectors"):
                    rules += ("banks.selectors",)
    return rules


def _arrows() -> list[str]:
    found = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            forbidden = _forbidden(module)
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    targets = [node.module]
                elif isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                else:
                    continue
                for target in targets:
                    if any(target == f or target.startswith(f + ".") for f in forbidden):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}")
    return found


def test_no_import_points_upwards():
    assert _arrows() == []
