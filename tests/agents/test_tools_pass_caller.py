"""Every request surface hands the caller to the services that check a permission (``by=``), so the
service's own check decides on each surface; only the server's own authority (management commands,
periodic tasks) calls them without one."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SURFACES = ("agents", "banks/api", "banks/admin", "curation", "portability")


def _checked_services() -> set[str]:
    names = set()
    for path in (ROOT / "banks" / "services").rglob("*.py"):
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(
            ".__init__"))
        names |= {name for name, fn in vars(module).items() if inspect.isfunction(fn)
                  and fn.__module__ == module.__name__ and "by" in inspect.signature(fn).parameters}
    return names


def test_request_surfaces_pass_the_caller_to_every_checking_service():
    checked = _checked_services()
    assert {"memory_forget", "hold_set", "hold_release", "lifecycle_run"} <= checked
    missing = []
    for surface in SURFACES:
        for path in (ROOT / surface).rglob("*.py"):
            if "management" in path.parts or "migrations" in path.parts:
                continue  # commands run on the server's own authority
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                if name in checked and not any(k.arg in ("by", None) for k in node.keywords):
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert not missing, "calls without by=:\n" + "\n".join(missing)
