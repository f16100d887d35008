"""Only the owner of a bank's memory rows (banks/services/memory_rows/) writes them with SQL or a
queryset ``update()``/``delete()``: a writer elsewhere would keep its own copy of the rows' rules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("banks", "curation", "portability", "agents", "memoryhub", "config", "bench")
OWNER = ROOT / "banks" / "services" / "memory_rows"

# Written-out SQL naming the table (banks_memoryentity, the mentions, belongs to the owner too).
_SQL = re.compile(r"\b(UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+\"?banks_memory(entity)?\b", re.IGNORECASE)
# The same statement with its table interpolated, in a module that names the table elsewhere.
_SQL_DYNAMIC = re.compile(r"\b(UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+\{", re.IGNORECASE)
_TABLE = re.compile(r"\bbanks_memory(entity)?\b")


def _orm_writes(source: str) -> set[int]:
    """Lines of a queryset of memory rows (or their mentions) updated or deleted in bulk, however the
    chain is spread over lines: ``Memory.objects``/``MemoryEntity.objects`` or a bank's ``memories``."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"update", "delete"}):
            continue
        receiver: ast.AST = node.func.value
        while isinstance(receiver, ast.Call | ast.Attribute | ast.Subscript):
            if isinstance(receiver, ast.Attribute) and (
                    receiver.attr == "memories"
                    or (receiver.attr == "objects" and isinstance(receiver.value, ast.Name)
                        and receiver.value.id in {"Memory", "MemoryEntity"})):
                lines.add(node.lineno)
                break
            receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
    return lines


def violations(path: Path, source: str) -> list[str]:
    names_table = bool(_TABLE.search(source))
    orm = _orm_writes(source)
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        if _SQL.search(line) or number in orm or (names_table and _SQL_DYNAMIC.search(line)):
            found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def scanned_files() -> list[Path]:
    files = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if OWNER in path.parents or "migrations" in path.parts:
                continue
            files.append(path)
    return files


def test_no_memory_row_writes_outside_the_owner() -> None:
    files = scanned_files()
    assert len(files) > 100, "the scan found the source tree"
    found = [v for path in files for v in violations(path, path.read_text(encoding="utf-8"))]
    assert not found, "memory rows written outside banks/services/memory_rows/:\n" + "\n".join(found)


def test_the_scan_sees_each_shape_of_write() -> None:
    path = ROOT / "banks" / "services" / "example.py"
    shapes = [
        'cursor.execute("UPDATE banks_memory SET text = %s", [t])',
        'cursor.execute("insert into banks_memoryentity (memory_id) values (1)")',
        'cursor.execute("DELETE FROM banks_memory WHERE id = 1")',
        "Memory.objects.filter(bank=bank).update(tags=[])",
        "Memory.objects.filter(pk=1).delete()",
        "(Memory.objects.filter(bank=bank)\n    .exclude(pk=1)\n    .update(tags=[]))",
        "bank.memories.filter(pk=1).delete()",
        "MemoryEntity.objects.filter(memory_id=1)[:5].delete()",
        'table = "banks_memory"\ncursor.execute(f"UPDATE {table} SET x = 1")',
    ]
    for shape in shapes:
        assert violations(path, shape), shape
    assert not violations(path, 'cursor.execute("UPDATE banks_entity SET mention_count = 0")')
    assert not violations(path, 'cursor.execute(f"INSERT INTO {table} (a) VALUES (1)")')
    assert not violations(path, "Memory.objects.filter(bank=bank).count()")
    assert not violations(path, "Entity.objects.filter(bank=bank).update(mention_count=0)")
    assert not violations(path, "context.update(memories=rows)")
