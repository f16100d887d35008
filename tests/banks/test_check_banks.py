"""`manage.py check_banks` repairs times stored before they were checked at the edges."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection

from banks.models import Memory
from banks.services.memories import memory_retain


def _break(memory: Memory, column: str, value: str) -> None:
    with connection.cursor() as cursor:
        # The raw value a retain with "0001-01-01T00:00:00+14:00" used to store.
        # Vetted: {column} is one of the test's own parametrized column names; the value is a parameter.
        cursor.execute(f"UPDATE banks_memory SET {column} = %s::timestamptz WHERE id = %s",  # noqa: S608
                       [value, memory.pk])


@pytest.mark.parametrize(("column", "value"), [
    ("occurred_at", "0001-01-01 00:00:00+14"),
    ("created_at", "9999-12-31 23:59:59-12"),
])
def test_a_bank_broken_by_an_old_row_is_repaired(api, bank, column, value):
    memory = memory_retain(bank=bank, text="met Bob in Berlin", actor="test").memory
    _break(memory, column, value)
    with pytest.raises(Exception, match="year|range"):
        list(Memory.objects.filter(pk=memory.pk).values_list(column, flat=True))

    dry = io.StringIO()
    call_command("check_banks", "--dry-run", stdout=dry)
    assert "would repair 1" in dry.getvalue() and "user-alice" in dry.getvalue()

    out = io.StringIO()
    call_command("check_banks", stdout=out)
    assert "repaired 1" in out.getvalue()
    memory.refresh_from_db()
    assert memory.metadata[f"_repaired_{column}"].startswith(("0001", "10000"))
    assert api.post("/v1/recall", {"query": "Bob", "bank_id": "user-alice"}).status_code == 200
    assert api.post("/v1/forget", {"bank_id": "user-alice", "scope": "all"}).status_code == 200

    again = io.StringIO()
    call_command("check_banks", stdout=again)
    assert "no stored time out of range" in again.getvalue()


def test_mention_counts_that_drifted_are_counted_again(bank):
    from banks.models import Entity
    from tests.factories import make_memory

    make_memory(bank, "Ines wrote the report.", entities=["Ines"])
    make_memory(bank, "Ines sent the report.", entities=["Ines"])
    # What an overwrite or an erase used to leave behind.
    Entity.objects.filter(bank=bank, entity_id="ines").update(mention_count=4)

    dry = io.StringIO()
    call_command("check_banks", "--dry-run", stdout=dry)
    assert "would repair 1 × entity mention count in bank(s) user-alice (1)" in dry.getvalue()
    assert Entity.objects.get(bank=bank, entity_id="ines").mention_count == 4

    out = io.StringIO()
    call_command("check_banks", stdout=out)
    assert "repaired 1 × entity mention count" in out.getvalue()
    assert Entity.objects.get(bank=bank, entity_id="ines").mention_count == 2
    again = io.StringIO()
    call_command("check_banks", stdout=again)
    assert "Every entity's mention count matches its mentions." in again.getvalue()
