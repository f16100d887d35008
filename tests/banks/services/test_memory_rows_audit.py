"""Every operation on memory rows is recorded by exactly one audit event naming its targets (a move: one
in each bank). The owner changes the rows; the service that decided the operation writes its event (a
restore's is written by the owner itself, whoever calls it), and these tests catch a path that forgets it or
writes it twice."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from banks.models import AuditEvent, Bank, Memory
from banks.services.bulk import bulk_apply
from banks.services.forget import memory_forget
from banks.services.memories import memories_archive, memories_restore, memory_update
from banks.services.memory_rows import rows_restore
from tests.factories import make_bank, make_memory

pytestmark = pytest.mark.django_db


def _events(bank: Bank) -> list[tuple[str, list[str]]]:
    return [(e.action, sorted(e.target_ids)) for e in AuditEvent.objects.filter(bank=bank).order_by("id")]


def _setup() -> tuple[Bank, Memory, Memory]:
    bank = make_bank("audited")
    return bank, make_memory(bank, "Ines signs the supplier contracts."), make_memory(bank, "Jo files them.")


def _rows(bank: Bank, *memories: Memory):  # noqa: ANN202
    return Memory.objects.filter(bank=bank, pk__in=[m.pk for m in memories])


OPERATIONS: dict[str, tuple[str, Callable[[Bank, Memory, Memory], object]]] = {
    "edit": ("memory.update", lambda b, m, _: memory_update(memory=m, actor="test", tags=["contracts"])),
    "archive": ("memory.archive", lambda b, m, n: memories_archive(bank=b, memory_ids=[m.memory_id, n.memory_id],
                                                                   actor="test")),
    "forget": ("memory.forget", lambda b, m, n: memory_forget(bank=b, actor="test",
                                                              memory_ids=[m.memory_id, n.memory_id])),
    "erase": ("memory.erase", lambda b, m, n: memory_forget(bank=b, actor="test", memory_ids=[m.memory_id,
                                                                                             n.memory_id],
                                                            erase=True, reason="erasure request")),
    "tag": ("memory.bulk_tag", lambda b, m, n: bulk_apply(bank=b, rows=_rows(b, m, n), action="tag", actor="test",
                                                          tag="contracts")),
}


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_an_operation_writes_one_event_naming_its_targets(name):
    bank, first, second = _setup()
    before = len(_events(bank))
    action, run = OPERATIONS[name]
    run(bank, first, second)
    targets = [first.memory_id] if name == "edit" else sorted([first.memory_id, second.memory_id])
    assert _events(bank)[before:] == [(action, targets)]


def test_restore_and_untag_write_one_event_each():
    bank, first, second = _setup()
    memories_archive(bank=bank, memory_ids=[first.memory_id, second.memory_id], actor="test")
    bulk_apply(bank=bank, rows=_rows(bank, first, second), action="tag", actor="test", tag="contracts")
    before = len(_events(bank))
    memories_restore(bank=bank, memory_ids=[first.memory_id, second.memory_id], actor="test")
    bulk_apply(bank=bank, rows=_rows(bank, first, second), action="untag", actor="test", tag="contracts")
    both = sorted([first.memory_id, second.memory_id])
    assert _events(bank)[before:] == [("memory.restore", both), ("memory.bulk_untag", both)]


def test_the_row_owner_records_a_restore_whoever_calls_it():
    """No caller can restore rows without the event: ``rows_restore`` writes it, naming what came back
    (an already live row is not named), and writes none when nothing came back."""
    bank, first, second = _setup()
    memories_archive(bank=bank, memory_ids=[first.memory_id], actor="test")
    before = len(_events(bank))
    assert rows_restore(bank, [first.pk, second.pk], actor="someone", reason="why") == [first.memory_id]
    assert _events(bank)[before:] == [("memory.restore", [first.memory_id])]
    event = AuditEvent.objects.filter(bank=bank).order_by("-id").first()
    assert (event.actor, event.reason) == ("someone", "why")
    assert rows_restore(bank, [first.pk], actor="someone") == []
    assert len(_events(bank)) == before + 1


def test_a_move_writes_one_event_in_each_bank():
    bank, first, second = _setup()
    target = make_bank("audited-target")
    before, before_target = len(_events(bank)), len(_events(target))
    bulk_apply(bank=bank, rows=_rows(bank, first), action="move", actor="test", target=target)
    assert _events(bank)[before:] == [("memory.bulk_move", [first.memory_id])]
    assert _events(target)[before_target:] == [("memory.bulk_move", [first.memory_id])]
