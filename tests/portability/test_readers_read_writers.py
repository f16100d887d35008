"""Every writer's output is read back by its reader: compressed or not, at any text length, with row numbers
in errors; and the smaller format promises (bad UTF-8 named by line, do-not-remember skipped, CR LF kept)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from banks.models import Memory
from banks.services.memories import memory_retain
from portability.formats.registry import open_archive
from portability.records import MemoryRecord, RecordError
from portability.services import archive_import
from portability.services.exporter import archive_export_as
from tests.portability.fixtures import FIXTURES

pytestmark = pytest.mark.django_db

FILES = {"csv": "out.csv.gz", "amplihack": "out.json.gz", "agentos_json": "brain.json.gz", "ama": "out.ama.jsonl.gz"}


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_a_compressed_export_is_read_by_its_reader(fmt, bank, make_bank, tmp_path):
    memory_retain(bank=bank, text="Ana Lima moved to Porto in May.", actor="t", tags=["move"])
    memory_retain(bank=bank, text="The Porto office opens at nine.", actor="t")
    dest = tmp_path / FILES[fmt]
    archive_export_as(bank=bank, dest=dest, fmt=fmt, actor="t")
    assert dest.read_bytes()[:2] == b"\x1f\x8b"
    detected, _, records = open_archive(dest)
    assert detected == fmt
    target = make_bank("copy")
    report = archive_import(bank=target, records=records, actor="t", extract_entities=False)
    assert (report.imported, report.invalid) == (2, 0), report.errors
    assert sorted(Memory.objects.filter(bank=target).values_list("text", flat=True)) == sorted(
        Memory.objects.filter(bank=bank).values_list("text", flat=True))


def test_csv_reads_a_text_longer_than_the_csv_modules_own_limit(bank, make_bank, tmp_path):
    long_text = "A very long memory. " * 10_000  # 200,000 characters: over 131,072 (imports take them)
    archive_import(bank=bank, records=lambda: iter([MemoryRecord(text=long_text, memory_id="long")]), actor="t")
    archive_export_as(bank=bank, dest=tmp_path / "long.csv", fmt="csv", actor="t")
    target = make_bank("copy")
    report = archive_import(bank=target, records=open_archive(tmp_path / "long.csv")[2], actor="t",
                            extract_entities=False)
    assert (report.imported, report.invalid) == (1, 0), report.errors
    assert Memory.objects.get(bank=target).text == long_text


def test_csv_names_the_row_that_is_not_utf8_after_the_first_batch(bank, tmp_path):
    rows = [f"r{i},Memory number {i} of the import\n".encode() for i in range(1200)]
    rows[1100] = b"r1100,Caf\xe9 latte is not UTF-8 here\n"
    (tmp_path / "bad.csv").write_bytes(b"id,content\n" + b"".join(rows))
    report = archive_import(bank=bank, records=open_archive(tmp_path / "bad.csv")[2], actor="t",
                            extract_entities=False)
    assert (report.imported, report.invalid) == (1199, 1)
    assert report.errors[0]["line"] == 1102 and "UTF-8" in report.errors[0]["reason"]


def test_agentos_ndjson_refuses_a_line_that_is_not_utf8_even_in_strict(bank, tmp_path):
    good = json.dumps({"id": "t1", "content": "A trace in good UTF-8.", "type": "semantic"}).encode()
    bad = b'{"id": "t2", "content": "Caf\xe9 au lait", "type": "semantic"}'
    (tmp_path / "traces.ndjson").write_bytes(good + b"\n" + bad + b"\n")
    items = list(open_archive(tmp_path / "traces.ndjson")[2]())
    assert isinstance(items[0], MemoryRecord) and isinstance(items[1], RecordError) and items[1].position == 2
    report = archive_import(bank=bank, records=open_archive(tmp_path / "traces.ndjson")[2], actor="t", strict=True)
    assert report.aborted and not Memory.objects.filter(bank=bank).exists()
    assert not Memory.objects.filter(text__contains="\ufffd").exists()


def test_a_do_not_remember_conversation_is_skipped_not_invalid(tmp_path, capsys):
    call_command("memory_import", "--bank", "chat", "--input", str(FIXTURES / "chatgpt_conversations.json"))
    out = capsys.readouterr().out
    assert "invalid 0" in out and "do-not-remember" in out
    assert Memory.objects.filter(bank__bank_id="chat").count() == 4


@pytest.mark.parametrize("fmt", ["markdown", "obsidian"])
def test_markdown_keeps_cr_lf_inside_a_text(fmt, bank, make_bank, tmp_path):
    text = "First line\r\nsecond line\rthird\nfourth"
    memory_retain(bank=bank, text=text, actor="t")
    archive_export_as(bank=bank, dest=tmp_path / "notes", fmt="markdown", actor="t")
    target = make_bank("copy")
    records = open_archive(tmp_path / "notes", fmt)[2]
    report = archive_import(bank=target, records=records, actor="t", extract_entities=False)
    assert report.imported == 1, report.errors
    assert Memory.objects.get(bank=target).text == text


@pytest.mark.parametrize(("fmt", "name"), [("ama", "a.ama.jsonl"), ("csv", "a.csv"), ("markdown", "md"),
                                           ("amplihack", "a.json"), ("agentos_json", "brain.json")])
def test_retained_at_travels_where_the_format_has_a_field_for_it(fmt, name, bank, make_bank, tmp_path):
    retained = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    archive_import(bank=bank, records=lambda: iter([MemoryRecord(text="Kept since 2024.", memory_id="m1",
                                                                 retained_at=retained)]), actor="t")
    assert Memory.objects.get(bank=bank).retained_at == retained
    archive_export_as(bank=bank, dest=tmp_path / name, fmt=fmt, actor="t")
    target = make_bank("copy")
    archive_import(bank=target, records=open_archive(tmp_path / name)[2], actor="t", extract_entities=False)
    assert Memory.objects.get(bank=target).retained_at == retained


@pytest.mark.parametrize(("fmt", "name"), [("ama", "a.ama.jsonl"), ("csv", "a.csv")])
def test_observations_travel_as_observations(fmt, name, bank, make_bank, tmp_path):
    from banks.models import Observation
    from banks.services.observations import observation_create

    a = memory_retain(bank=bank, text="Ana Lima moved to Porto in May.", actor="t").memory
    b = memory_retain(bank=bank, text="Ana Lima works from the Porto office.", actor="t").memory
    original = observation_create(bank=bank, text="Ana lives and works in Porto.", actor="t",
                                  source_ids=[a.memory_id, b.memory_id], confidence=0.8)
    archive_export_as(bank=bank, dest=tmp_path / name, fmt=fmt, actor="t")
    target = make_bank("copy")
    for _ in range(2):  # a second run skips what is there
        report = archive_import(bank=target, records=open_archive(tmp_path / name)[2], actor="t",
                                extract_entities=False)
    assert report.invalid == 0 and report.observations == 0 and report.skipped == 3, report.errors
    assert Memory.objects.filter(bank=target).count() == 2
    copy = Observation.objects.get(bank=target)
    assert (copy.observation_id, copy.text, copy.confidence, copy.proof_count) == (
        original.observation_id, original.text, original.confidence, original.proof_count)
    assert sorted(copy.evidence.values_list("memory__memory_id", flat=True)) == sorted([a.memory_id, b.memory_id])
