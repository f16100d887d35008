"""Concurrent writers of one bank's rows, on real threads: no deadlock, no lost update."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection, transaction

from banks.models import Memory
from banks.services.bulk import bulk_apply
from banks.services.memory_edit import memory_update
from memoryhub.errors import Conflict, database_error_as_domain_error
from tests.banks.services.conftest import run_in_threads, wait_for_lock_waiter
from tests.factories import make_bank, make_import, make_memory, row_invariant_breaks

pytestmark = pytest.mark.django_db(transaction=True)

ENTITIES = [f"Person {n:02d}" for n in range(40)]


def _records(prefix: str, order: list[str]) -> list[tuple[str, str, list[str]]]:
    # Each record names two neighbouring entities: one archive walks them up, the other down.
    return [(f"{prefix}-{i}", f"{prefix} note {i}: {a} met {b} about the quarterly plan.", [a, b])
            for i, (a, b) in enumerate(zip(order, order[1:], strict=False))]


def test_two_imports_naming_the_same_entities_in_opposite_orders_both_land():
    bank = make_bank("imports-race")
    archives = [_records("up", ENTITIES * 3), _records("down", list(reversed(ENTITIES)) * 3)]
    results, errors = run_in_threads(2, lambda i: make_import(bank, archives[i], batch_size=500))
    assert errors == [None, None]
    assert [r.imported for r in results] == [len(archives[0]), len(archives[1])]
    assert Memory.objects.filter(bank=bank).count() == len(archives[0]) + len(archives[1])
    assert row_invariant_breaks() == {}


def test_two_imports_overwriting_the_same_memories_in_opposite_orders_both_land():
    bank = make_bank("overwrites-race")
    original = _records("m", ENTITIES)
    make_import(bank, original)
    up = [(memory_id, f"{text} (from the first archive)", names) for memory_id, text, names in original]
    down = [(memory_id, f"{text} (from the second archive)", list(reversed(names)))
            for memory_id, text, names in reversed(original)]
    results, errors = run_in_threads(2, lambda i: make_import(bank, [up, down][i], on_conflict="overwrite"))
    assert errors == [None, None]
    assert [r.overwritten for r in results] == [len(original), len(original)]
    assert row_invariant_breaks() == {}


def test_a_deadlock_is_a_conflict_to_retry_not_an_unavailable_database():
    bank = make_bank("deadlock-answer")
    first, second = make_memory(bank, "First row to lock."), make_memory(bank, "Second row to lock.")
    both_hold = threading.Barrier(2)

    def lock(i: int) -> None:
        mine, theirs = (first, second) if i == 0 else (second, first)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM banks_memory WHERE id = %s FOR UPDATE", [mine.pk])
            both_hold.wait(timeout=30)
            cursor.execute("SELECT 1 FROM banks_memory WHERE id = %s FOR UPDATE", [theirs.pk])

    _, errors = run_in_threads(2, lock)
    lost = [e for e in errors if e is not None]
    assert len(lost) == 1 and isinstance(lost[0], OperationalError)
    answer = database_error_as_domain_error(lost[0])
    assert isinstance(answer, Conflict) and answer.status == 409 and "retry" in answer.message


def test_a_bulk_tag_keeps_a_concurrent_edit_of_the_same_row():
    bank = make_bank("tag-race")
    memory = make_memory(bank, "Frank runs the night shift.", tags=["ops"])
    edited = threading.Event()

    def edit() -> None:
        with transaction.atomic():
            memory_update(memory=Memory.objects.get(pk=memory.pk), actor="test", tags=["ops", "night"])
            edited.set()
            # Hold the row until the bulk tag waits for it.
            wait_for_lock_waiter("UPDATE%banks_memory%", tries=600, pause=0.05)

    def tag() -> None:
        edited.wait(timeout=30)
        bulk_apply(bank=bank, rows=Memory.objects.filter(pk=memory.pk), action="tag", actor="test", tag="rota")

    _, errors = run_in_threads(2, lambda i: edit() if i == 0 else tag())
    assert errors == [None, None]
    memory.refresh_from_db()
    assert sorted(memory.tags) == ["night", "ops", "rota"]
