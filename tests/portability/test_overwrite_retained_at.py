"""An overwrite import takes ``retained_at`` from the archive, as a new row does; a record without one
keeps the row's own."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from banks.models import Memory
from banks.services.banks import bank_create
from banks.services.memories import memory_retain
from portability.formats.registry import open_archive
from portability.records import MemoryRecord
from portability.services import archive_import
from portability.services.exporter import archive_export_as

pytestmark = pytest.mark.django_db
THEN = datetime(2019, 3, 4, 5, 6, 7, tzinfo=UTC)


def _retained(bank_id: str) -> dict[str, datetime]:
    return dict(Memory.objects.filter(bank__bank_id=bank_id).values_list("memory_id", "retained_at"))


def test_an_overwrite_import_round_trips_retained_at(tmp_path):
    source = bank_create(bank_id="rt-source", actor="t")
    records = [MemoryRecord(memory_id=f"mem-{i}", text=f"The archive's text {i}.", retained_at=THEN.replace(day=i + 1))
               for i in range(3)]
    assert archive_import(bank=source, records=lambda: iter(records), actor="t", extract_entities=False).imported == 3
    dest = tmp_path / "out.ama.jsonl"
    archive_export_as(bank=source, dest=dest, fmt="ama", actor="t")

    target = bank_create(bank_id="rt-target", actor="t")
    for i in range(3):
        memory_retain(bank=target, text=f"The target's own text {i}.", actor="t", memory_id=f"mem-{i}")
    assert all(at > THEN.replace(year=2020) for at in _retained("rt-target").values())

    report = archive_import(bank=target, records=open_archive(dest)[2], actor="t", on_conflict="overwrite",
                            extract_entities=False)
    assert report.overwritten == 3, report.errors
    assert _retained("rt-target") == _retained("rt-source")
    assert Memory.objects.get(bank=target, memory_id="mem-0").text == "The archive's text 0."


def test_an_overwrite_without_retained_at_keeps_the_rows_own():
    target = bank_create(bank_id="rt-keep", actor="t")
    memory_retain(bank=target, text="Old text.", actor="t", memory_id="mem-k")
    before = _retained("rt-keep")["mem-k"]
    report = archive_import(bank=target, records=lambda: iter([MemoryRecord(memory_id="mem-k", text="New text.")]),
                            actor="t", on_conflict="overwrite", extract_entities=False)
    assert report.overwritten == 1, report.errors
    assert _retained("rt-keep")["mem-k"] == before
