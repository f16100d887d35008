"""Every operation on memory rows is recorded by exactly one audit event naming the rows it changed (a
move: one in each bank), written by the rows' owner (banks.services.memory_rows) whoever calls it. Each
operation runs here through two or more of the surfaces that reach it (REST, the operator pages' bulk
form, the bulk job a Celery worker runs, an import, the MCP/agent tools' forget) and every surface must
leave the same event: the same action, the same targets, the same compliance flag."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from banks.models import AuditEvent, Bank, Job, Memory
from banks.services.bulk import bulk_apply
from banks.services.bulk_jobs import bulk_job_start, bulk_job_work
from banks.services.holds import hold_set
from banks.services.memory_archiving import memories_archive, memories_restore
from banks.services.memory_edit import memory_update
from banks.services.memory_rows import rows_restore
from portability.records import MemoryRecord
from portability.services.importer import archive_import
from tests.factories import make_bank, make_memory

pytestmark = pytest.mark.django_db

Shape = tuple[str, list[str], bool]


def _events(bank: Bank, after: int = 0) -> list[Shape]:
    """The memory events (a job's own, ``job.bulk``, are not about rows)."""
    return [(e.action, sorted(e.target_ids), e.compliance)
            for e in AuditEvent.objects.filter(bank=bank, pk__gt=after, action__startswith="memory.").order_by("id")]


def _last() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def _rows(bank: Bank, *memories: Memory):  # noqa: ANN202
    return Memory.objects.filter(bank=bank, pk__in=[m.pk for m in memories])


def _job(bank: Bank, memories: list[Memory], action: str, **params: Any) -> None:
    """The bulk form's big selections: queued as a job, run by the worker (banks.tasks.bulk_apply)."""
    job = bulk_job_start(bank=bank, action=action, actor="test", ids=[m.memory_id for m in memories], **params)
    bulk_job_work(Job.objects.get(pk=job.pk), bank)


def _rest(api: Any, memories: list[Memory], **body: Any) -> None:
    answer = api.post("/v1/forget", {"bank_id": "user-alice", "memory_ids": [m.memory_id for m in memories], **body})
    assert answer.status_code == 200, answer.content


def _imported(bank: Bank, *, held: bool) -> list[str]:
    """An archive whose records were deleted in the source: stored, then forgotten (archived under a hold)."""
    if held:
        hold_set(bank=bank, hold_id="case-1", reason="litigation", set_by="test", actor="test")
    ids = ["gone-1", "gone-2"]
    archive_import(bank=bank, actor="test", extract_entities=False, records=lambda: [
        MemoryRecord(memory_id=i, text=f"Deleted upstream: note {i}.", forgotten=True) for i in ids])
    return ids


def _tool(api: Any, memories: list[Memory]) -> None:
    """The agent tool, as REST's /v1/agent and MCP both run it (agents.toolbox.run_tool)."""
    answer = api.post("/v1/agent/memory_forget", {"bank_id": "user-alice", "memory_ids": [m.memory_id for m in memories]})
    assert answer.status_code == 200, answer.content


# operation -> (action, compliance, {surface: run(api, bank, [m, n]) -> the ids it names, or None for m and n})
Run = Callable[[Any, Bank, list[Memory]], "list[str] | None"]
SURFACES: dict[str, tuple[str, bool, dict[str, Run]]] = {
    "archive": ("memory.archive", False, {
        "rest": lambda api, b, ms: _rest(api, ms, archive=True),
        "bulk form": lambda api, b, ms: bulk_apply(bank=b, rows=_rows(b, *ms), action="archive", actor="test") and None,
        "admin action": lambda api, b, ms: memories_archive(bank=b, memory_ids=[m.memory_id for m in ms],
                                                           actor="admin:olga") and None,
        "import under a hold": lambda api, b, ms: _imported(b, held=True),
    }),
    "forget": ("memory.forget", False, {
        "rest": lambda api, b, ms: _rest(api, ms),
        "bulk job": lambda api, b, ms: _job(b, ms, "forget"),
        "agent tool": lambda api, b, ms: _tool(api, ms),
        "import": lambda api, b, ms: _imported(b, held=False),
    }),
    "erase": ("memory.erase", True, {
        "rest": lambda api, b, ms: _rest(api, ms, erase=True),
        "rest compliance": lambda api, b, ms: _rest(api, ms, compliance=True, reason="erasure request"),
        "bulk form compliance": lambda api, b, ms: bulk_apply(bank=b, rows=_rows(b, *ms), action="forget",
                                                              actor="test", compliance=True, reason="erasure request") and None,
    }),
    "tag": ("memory.tag", False, {
        "bulk form": lambda api, b, ms: bulk_apply(bank=b, rows=_rows(b, *ms), action="tag", actor="test",
                                                   tag="contracts") and None,
        "bulk job": lambda api, b, ms: _job(b, ms, "tag", tag="contracts"),
    }),
    "untag": ("memory.untag", False, {
        "bulk form": lambda api, b, ms: bulk_apply(bank=b, rows=_rows(b, *ms), action="untag", actor="test",
                                                   tag="ops") and None,
        "bulk job": lambda api, b, ms: _job(b, ms, "untag", tag="ops"),
    }),
}


@pytest.mark.parametrize(("operation", "surface"), [(o, s) for o, (_, _, ss) in SURFACES.items() for s in ss])
def test_each_surface_leaves_the_one_event_of_the_operation(operation, surface, api):
    bank = make_bank("user-alice")
    first, second = make_memory(bank, "Ines signs the supplier contracts.", tags=["ops"]), make_memory(
        bank, "Jo files them.", tags=["ops"])
    action, compliance, surfaces = SURFACES[operation]
    before = _last()
    named = surfaces[surface](api, bank, [first, second])
    targets = sorted(named if named is not None else [first.memory_id, second.memory_id])
    assert _events(bank, before) == [(action, targets, compliance)]


@pytest.mark.parametrize("surface", ["bulk form", "bulk job"])
def test_a_tag_names_only_the_rows_it_changed(surface):
    bank = make_bank("tagged")
    first, second = make_memory(bank, "Ines signs the supplier contracts.", tags=["contracts"]), make_memory(
        bank, "Jo files them.")
    before = _last()
    SURFACES["tag"][2][surface](None, bank, [first, second])
    assert _events(bank, before) == [("memory.tag", [second.memory_id], False)]


@pytest.mark.parametrize("surface", ["bulk form", "bulk job"])
def test_a_move_writes_one_event_in_each_bank(surface):
    bank, target = make_bank("moving"), make_bank("moving-target")
    first = make_memory(bank, "Ines signs the supplier contracts.")
    before = _last()
    if surface == "bulk form":
        bulk_apply(bank=bank, rows=_rows(bank, first), action="move", actor="test", target=target)
    else:
        _job(bank, [first], "move", target=target)
    assert _events(bank, before) == [("memory.move", [first.memory_id], False)]
    assert _events(target, before) == [("memory.move", [first.memory_id], False)]


def test_an_edit_and_a_restore_write_one_event_each():
    bank = make_bank("edited")
    first, second = make_memory(bank, "Ines signs the supplier contracts."), make_memory(bank, "Jo files them.")
    memories_archive(bank=bank, memory_ids=[second.memory_id], actor="test")
    before = _last()
    memory_update(memory=first, actor="test", tags=["contracts"])
    memories_restore(bank=bank, memory_ids=[second.memory_id], actor="test")
    assert _events(bank, before) == [("memory.update", [first.memory_id], False),
                                     ("memory.restore", [second.memory_id], False)]


def test_the_row_owner_records_a_restore_whoever_calls_it():
    """No caller can restore rows without the event: ``rows_restore`` writes it, naming what came back
    (an already live row is not named), and writes none when nothing came back."""
    bank = make_bank("restored")
    first, second = make_memory(bank, "Ines signs the supplier contracts."), make_memory(bank, "Jo files them.")
    memories_archive(bank=bank, memory_ids=[first.memory_id], actor="test")
    before = _last()
    assert rows_restore(bank, [first.pk, second.pk], actor="someone", reason="why") == [first.memory_id]
    assert _events(bank, before) == [("memory.restore", [first.memory_id], False)]
    event = AuditEvent.objects.filter(bank=bank).order_by("-id").first()
    assert (event.actor, event.reason) == ("someone", "why")
    assert rows_restore(bank, [first.pk], actor="someone") == []
    assert len(_events(bank, before)) == 1


def test_a_forget_that_changes_nothing_is_still_recorded_once(api):
    bank = make_bank("user-alice")
    before = _last()
    _rest(api, [Memory(memory_id="no-such-memory")])
    assert _events(bank, before) == [("memory.forget", [], False)]
