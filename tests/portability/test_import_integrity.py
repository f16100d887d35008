"""Nothing is lost on import: links across batches and runs, entities, times, repeated ids, audit per batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from banks.models import AuditEvent, Entity, Memory, MemoryEntity, MemoryLink
from portability.formats.registry import open_archive
from portability.models import PendingLink
from portability.services import archive_import

pytestmark = pytest.mark.django_db

HEADER = {"_ama_version": 1, "bank_id": "src", "exported_at": "2026-01-01T00:00:00Z", "provider": "x",
          "memory_count": 0}


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(x) for x in [HEADER, *lines]) + "\n", encoding="utf-8")
    return path


def run(bank, path, **kw):
    _, _, records = open_archive(path)
    return archive_import(bank=bank, records=records, actor="test", **kw)


def chain(n: int) -> list[dict]:
    """m0 -> m1 -> ... : every link points forward, into a later batch when batches are small."""
    return [{"id": f"m{i}", "text": f"fact number {i} about topic {i * 7}",
             "links": [{"target_id": f"m{i + 1}", "link_type": "next"}] if i + 1 < n else []} for i in range(n)]


def test_ama_links_are_stored_across_batches(bank, tmp_path):
    report = run(bank, write(tmp_path / "a.ama.jsonl", chain(7)), batch_size=2)
    assert report.imported == 7
    assert MemoryLink.objects.filter(bank=bank).count() == 6
    assert report.unresolved_links == 0 and not PendingLink.objects.exists()
    # One start event, one per batch, one at the end: a crash leaves no batch without its record.
    assert AuditEvent.objects.filter(action="bank.import.start").count() == 1
    assert AuditEvent.objects.filter(action="bank.import.batch").count() == 4
    assert AuditEvent.objects.filter(action="bank.import").count() == 1


def test_a_rerun_after_a_partial_import_completes_the_links(bank, tmp_path):
    lines = chain(6)
    # The first run "dies" after the first three lines: their forward link waits as a pending row.
    run(bank, write(tmp_path / "part.ama.jsonl", lines[:3]), batch_size=2)
    assert MemoryLink.objects.filter(bank=bank).count() == 2
    assert PendingLink.objects.filter(bank=bank).count() == 1
    again = run(bank, write(tmp_path / "all.ama.jsonl", lines), batch_size=2)
    assert (again.imported, again.skipped) == (3, 3)
    assert MemoryLink.objects.filter(bank=bank).count() == 5
    assert again.unresolved_links == 0


def test_created_at_comes_from_astrocyte_metadata(bank, tmp_path):
    run(bank, write(tmp_path / "c.ama.jsonl", [
        {"id": "a", "text": "first", "metadata": {"_created_at": "2024-03-04T05:06:07+00:00"}}]))
    assert Memory.objects.get(memory_id="a").created_at.isoformat() == "2024-03-04T05:06:07+00:00"


def test_overwrite_replaces_entities_and_every_column(bank, tmp_path):
    run(bank, write(tmp_path / "1.ama.jsonl", [
        {"id": "a", "text": "Alice moved", "memory_layer": "episodic", "source": "s1",
         "entities": [{"name": "Alice", "entity_type": "PERSON"}]}]))
    run(bank, write(tmp_path / "2.ama.jsonl", [
        {"id": "a", "text": "Bob moved", "memory_layer": "semantic", "source": "s2",
         "occurred_at": "2025-01-01T00:00:00Z", "entities": [{"name": "Bob", "entity_type": "PERSON"}]}]),
        on_conflict="overwrite")
    memory = Memory.objects.get(memory_id="a")
    assert (memory.text, memory.memory_layer, memory.source) == ("Bob moved", "semantic", "s2")
    assert memory.occurred_at is not None
    names = set(MemoryEntity.objects.filter(memory=memory).values_list("entity__name", flat=True))
    assert names == {"Bob"}


def test_memories_without_entities_get_them_extracted(bank, tmp_path):
    run(bank, write(tmp_path / "e.ama.jsonl", [{"id": "a", "text": "Marie Curie worked in Paris with Pierre"}]))
    assert MemoryEntity.objects.filter(memory__memory_id="a").exists()
    assert Entity.objects.filter(bank=bank).exists()


def test_repeated_ids_in_one_file_are_reported_and_fail_strict(bank, tmp_path):
    path = write(tmp_path / "d.ama.jsonl", [{"id": "a", "text": "one"}, {"id": "b", "text": "two"},
                                            {"id": "a", "text": "three"}])
    strict = run(bank, path, strict=True)
    assert strict.aborted and not Memory.objects.filter(bank=bank).exists()
    assert strict.errors == [{"line": 4, "reason": "memory_id 'a' repeats line 2"}]
    report = run(bank, path)
    assert (report.imported, report.invalid) == (2, 1)
    assert report.errors == [{"line": 4, "reason": "memory_id 'a' repeats line 2"}]


def test_a_concurrent_writer_loses_nothing_else_of_the_batch(bank, tmp_path, monkeypatch):
    """Rows another writer stored between classification and insert are reported; the rest keep entities and links."""
    from portability.services import importer

    original = importer._Importer._insert

    def racing(self, rows):
        Memory.objects.create(bank=self.bank, memory_id="b", text="someone else", content_hash="x" * 64,
                              retained_at=rows[0].retained_at, created_at=rows[0].created_at)
        monkeypatch.setattr(importer._Importer, "_insert", original)
        return original(self, rows)

    monkeypatch.setattr(importer._Importer, "_insert", racing)
    report = run(bank, write(tmp_path / "r.ama.jsonl", [
        {"id": "a", "text": "alpha", "entities": [{"name": "Ann"}], "links": [{"target_id": "c", "link_type": "x"}]},
        {"id": "b", "text": "beta"},
        {"id": "c", "text": "gamma", "entities": [{"name": "Cy"}]}]))
    assert (report.imported, report.duplicates) == (2, 1)
    assert MemoryEntity.objects.filter(memory__bank=bank).count() == 2
    assert MemoryLink.objects.filter(bank=bank).count() == 1
