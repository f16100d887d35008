"""Import and export services on the real database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from banks.models import AuditEvent, Entity, Memory, Observation
from banks.providers import get_embedder
from banks.services.memories import memory_retain
from banks.services.observations import observation_create
from portability.formats.registry import open_archive
from portability.services import archive_export, archive_import
from tests.portability.fixtures import FIXTURES

pytestmark = pytest.mark.django_db

HEADER = {"_ama_version": 1, "bank_id": "src", "exported_at": "2026-01-01T00:00:00Z", "provider": "x",
          "memory_count": 0}


def write(path: Path, lines: list) -> Path:
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) if not isinstance(x, str) else x
                              for x in [HEADER, *lines]) + "\n", encoding="utf-8")
    return path


def run(bank, path, **kw):
    _, header, records = open_archive(path)
    return archive_import(bank=bank, records=records, actor="test", **kw)


def test_the_shared_sample_imports_keeping_ids_types_and_entities(bank):
    report = run(bank, FIXTURES / "sample.ama.jsonl")
    # m-0003 carries an observation's bookkeeping (_obs_source_ids): it comes in as an observation.
    assert (report.imported, report.observations, report.duplicates, report.invalid) == (10, 1, 1, 0)
    assert report.errors == [{"line": 8, "reason": "duplicate content of memory 'm-0001'"}]
    assert Memory.objects.get(memory_id="m-0002").fact_type == "experience"
    assert Observation.objects.get(bank=bank, observation_id="m-0003").evidence.count() == 2
    assert Memory.objects.get(memory_id="m-0011").fact_type == "world"
    assert Memory.objects.get(memory_id="m-0001").source == "chat:session-17"
    assert Entity.objects.filter(bank=bank, name="Zoë").exists()
    again = run(bank, FIXTURES / "sample.ama.jsonl")
    assert (again.imported, again.skipped, again.duplicates) == (0, 11, 1)
    assert again.astrocyte_result() == {"imported": 0, "skipped": 12, "errors": 0}
    assert AuditEvent.objects.filter(action="bank.import").count() == 2


def test_on_conflict_overwrite_and_error(bank, tmp_path):
    write(tmp_path / "a.jsonl", [{"id": "m1", "text": "first text"}])
    run(bank, tmp_path / "a.jsonl")
    write(tmp_path / "b.jsonl", [{"id": "m1", "text": "second text", "tags": ["new"]}])
    overwrite = run(bank, tmp_path / "b.jsonl", on_conflict="overwrite")
    assert overwrite.overwritten == 1
    assert Memory.objects.get(memory_id="m1").text == "second text"
    error = run(bank, tmp_path / "b.jsonl", on_conflict="error")
    assert error.conflicts == 1 and error.errors == [{"line": 2, "reason": "memory_id 'm1' already exists"}]
    assert error.astrocyte_result()["errors"] == 1


def test_dry_run_reports_and_writes_nothing(bank, tmp_path):
    memory_retain(bank=bank, text="already here", actor="test", memory_id="m0")
    write(tmp_path / "a.jsonl", [{"id": "m0", "text": "x"}, {"id": "m1", "text": "new"},
                                 {"id": "m2", "text": "already here"}, {"id": "m3", "text": "new"}, "{broken"])
    report = run(bank, tmp_path / "a.jsonl", dry_run=True)
    assert (report.imported, report.skipped, report.duplicates, report.invalid) == (1, 1, 2, 1)
    assert Memory.objects.count() == 1


def test_strict_mode_writes_nothing_when_a_line_is_bad(bank, tmp_path):
    write(tmp_path / "a.jsonl", [{"id": "m1", "text": "fine"}, {"id": "m2"}])
    report = run(bank, tmp_path / "a.jsonl", strict=True)
    assert report.aborted and report.invalid == 1 and report.imported == 0
    assert Memory.objects.count() == 0
    lenient = run(bank, tmp_path / "a.jsonl")
    assert (lenient.imported, lenient.invalid) == (1, 1)


def test_embeddings_are_reused_only_from_the_same_model(bank, tmp_path):
    embedder = get_embedder()
    own = [0.0] * embedder.dimensions
    own[3] = 1.0
    write(tmp_path / "a.jsonl", [
        {"id": "same", "text": "same model", "embedding": own, "embedding_model": embedder.name},
        {"id": "other", "text": "other model", "embedding": [1.0, 0.0], "embedding_model": "elsewhere"},
    ])
    run(bank, tmp_path / "a.jsonl")
    assert [float(x) for x in Memory.objects.get(memory_id="same").embedding] == own
    other = [float(x) for x in Memory.objects.get(memory_id="other").embedding]
    assert len(other) == embedder.dimensions and other == pytest.approx(embedder.embed_one("other model"), abs=1e-6)


def test_export_round_trip_keeps_every_field(bank, make_bank, tmp_path):
    memory_retain(bank=bank, text="Alice Smith moved to Lisbon.", actor="test", tags=["move"],
                  metadata={"k": 1}, source="chat", fact_type="experience",
                  occurred_at=None, entities=[{"name": "Alice Smith", "entity_type": "PERSON"}])
    kept = memory_retain(bank=bank, text="Bob likes tea.", actor="test").memory
    observation_create(bank=bank, text="People move.", actor="test", source_ids=[kept.memory_id])
    report = archive_export(bank=bank, dest=tmp_path / "out.ama.jsonl", actor="test", include_embeddings=True)
    assert (report.exported_count, report.memories, report.observations) == (3, 2, 1)
    lines = [json.loads(x) for x in (tmp_path / "out.ama.jsonl").read_text().splitlines()]
    assert list(lines[0]) == ["_ama_version", "bank_id", "exported_at", "provider", "memory_count"]
    assert lines[0]["memory_count"] == 3 and lines[-1]["fact_type"] == "observation"
    assert lines[-1]["metadata"]["_obs_source_ids"] == [kept.memory_id]
    target = make_bank("copy")
    imported = run(target, tmp_path / "out.ama.jsonl")
    assert (imported.imported, imported.observations) == (2, 1)  # the observation comes back as one
    copy = Memory.objects.get(bank=target, text="Alice Smith moved to Lisbon.")
    original = Memory.objects.get(bank=bank, text="Alice Smith moved to Lisbon.")
    assert (copy.memory_id, copy.tags, copy.metadata, copy.source, copy.fact_type) == (
        original.memory_id, original.tags, original.metadata, original.source, original.fact_type)
    assert list(copy.entities.values_list("name", flat=True)) == ["Alice Smith"]
    assert [float(x) for x in copy.embedding] == pytest.approx([float(x) for x in original.embedding])


def test_export_leaves_no_file_when_it_fails(bank, tmp_path, monkeypatch):
    memory_retain(bank=bank, text="x", actor="test")
    from portability.services import exporter

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    def lines_then_boom(*args, **kwargs):
        yield '{"id": "half"}\n'
        raise RuntimeError("disk full")

    # Both ways memories are written: by PostgreSQL (no embeddings) and through records (with them).
    monkeypatch.setattr(exporter, "memory_lines", lines_then_boom)
    monkeypatch.setattr(exporter, "memory_record", boom)
    for include_embeddings in (False, True):
        with pytest.raises(RuntimeError):
            archive_export(bank=bank, dest=tmp_path / "out.ama.jsonl", actor="test",
                           include_embeddings=include_embeddings)
        assert list(tmp_path.iterdir()) == []
