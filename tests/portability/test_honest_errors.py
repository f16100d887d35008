"""Gzip archives, zip bombs, exit codes, strict aborts and bad bytes: clear errors, never a traceback."""

from __future__ import annotations

import gzip
import json
import os
import stat
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from banks.models import Bank, Memory
from banks.services.memories import memory_retain
from portability.formats.registry import open_archive
from portability.services import archive_export, archive_import
from tests.portability.fixtures import bank_folder

pytestmark = pytest.mark.django_db

HEADER = json.dumps({"_ama_version": 1, "bank_id": "src", "exported_at": "2026-01-01T00:00:00Z", "provider": "x"})


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_gzip_archives_are_written_and_read_by_their_magic_bytes(bank, make_bank, tmp_path):
    memory_retain(bank=bank, text="Paris is in France", actor="t", extract_entities=False)
    dest = tmp_path / "alice.ama.jsonl.gz"
    archive_export(bank=bank, dest=dest, actor="t")
    assert dest.read_bytes()[:2] == b"\x1f\x8b"
    # Renamed without the suffix it is still recognised from its content.
    renamed = tmp_path / "alice.bin"
    dest.rename(renamed)
    fmt, _, records = open_archive(renamed)
    copy = make_bank("copy")
    assert fmt == "ama" and archive_import(bank=copy, records=records, actor="t").imported == 1
    assert Memory.objects.get(bank=copy).text == "Paris is in France"


def test_a_zip_bomb_stops_with_a_clear_error(bank, tmp_path, settings):
    settings.MEMORYHUB_MAX_DECOMPRESSED_BYTES = 200_000
    line = json.dumps({"id": "a", "text": "x" * 1000})
    (tmp_path / "bomb.ama.jsonl.gz").write_bytes(gzip.compress((HEADER + "\n" + (line + "\n") * 1000).encode()))
    with pytest.raises(CommandError, match="decompresses to more than 200000 bytes"):
        run("memory_import", "--bank", "user-alice", "--input", str(tmp_path / "bomb.ama.jsonl.gz"))


def test_binary_file_read_as_ama_is_a_one_line_error(bank, tmp_path):
    (tmp_path / "x.ama.jsonl").write_bytes(gzip.compress(b"\x00\xff" * 100)[:40])
    with pytest.raises(CommandError):
        run("memory_import", "--bank", "user-alice", "--input", str(tmp_path / "x.ama.jsonl"), "--format", "ama")


def test_invalid_lines_make_the_command_fail_after_a_full_summary(bank, tmp_path):
    (tmp_path / "a.ama.jsonl").write_text(HEADER + '\n{"id": "a", "text": "ok"}\n{"id": "b"}\n')
    out = StringIO()
    with pytest.raises(CommandError, match="1 line"):
        call_command("memory_import", "--bank", "user-alice", "--input", str(tmp_path / "a.ama.jsonl"),
                     stdout=out, stderr=StringIO())
    summary = out.getvalue()
    for word in ("imported 1 new", "skipped 0", "duplicates 0", "conflicts 0", "invalid 1", "links 0"):
        assert word in summary


def test_create_bank_with_dry_run_creates_nothing(db, tmp_path):
    (tmp_path / "a.ama.jsonl").write_text(HEADER + '\n{"id": "a", "text": "ok"}\n')
    out = run("memory_import", "--bank", "brand-new", "--input", str(tmp_path / "a.ama.jsonl"), "--create-bank",
              "--dry-run")
    assert "would import 1 new" in out
    assert not Bank.objects.filter(bank_id="brand-new").exists()


def test_strict_abort_over_http_is_a_422(api, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    (bank_folder(tmp_path, "user-alice") / "bad.ama.jsonl").write_text(HEADER + '\n{"id": "a", "text": "ok"}\n{"id": "b"}\n')
    response = api.post("/v1/import", {"bank_id": "user-alice", "path": str(tmp_path / "bad.ama.jsonl"),
                                       "strict": True})
    assert response.status_code == 422 and "strict mode" in response.json()["detail"]
    assert Memory.objects.count() == 0


def test_a_lone_surrogate_in_a_path_is_a_422(api, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    body = '{"bank_id": "user-alice", "path": "' + str(tmp_path).replace("\\", "/") + '/a\\udc80.jsonl"}'
    for url in ("/v1/import", "/v1/export"):
        response = api.post(url, body)
        assert response.status_code == 422, (url, response.content)


def test_uploads_are_readable_by_the_server_user_only(admin_client, bank, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    admin_client.post("/banks/user-alice/transfer/upload",
                      {"archive": SimpleUploadedFile("u.ama.jsonl", HEADER.encode() + b"\n"), "root": str(tmp_path)})
    assert stat.S_IMODE(os.stat(bank_folder(tmp_path, "user-alice") / "u.ama.jsonl").st_mode) == 0o600


def test_a_directory_export_appears_whole_or_not_at_all(bank, tmp_path, monkeypatch):
    from portability.formats import markdown
    from portability.services.exporter import archive_export_as

    for text in ("first fact", "second fact"):
        memory_retain(bank=bank, text=text, actor="t", extract_entities=False)
    original = markdown.write_markdown

    def dies_half_way(path, header, records):
        original(path, header, list(records)[:1])
        raise OSError("disk full")

    monkeypatch.setattr(markdown, "write_markdown", dies_half_way)
    with pytest.raises(OSError):
        archive_export_as(bank=bank, dest=tmp_path / "notes", fmt="markdown", actor="t")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(markdown, "write_markdown", original)
    assert archive_export_as(bank=bank, dest=tmp_path / "notes", fmt="markdown", actor="t").exported_count == 2
    assert [p.name for p in tmp_path.iterdir()] == ["notes"] and len(list((tmp_path / "notes").rglob("*.md"))) == 2


@pytest.mark.parametrize(("content", "message"), [
    (b'{"id": "a", "text": "no header"}\n', "missing _ama_version"),
    (b'{"_ama_version": 2}\n', "Unsupported AMA version 2"),
    (b"", "AMA file is empty"),
])
def test_a_file_named_ama_gets_ama_errors(bank, tmp_path, content, message):
    (tmp_path / "x.ama.jsonl").write_bytes(content)
    with pytest.raises(CommandError, match=message):
        run("memory_import", "--bank", "user-alice", "--input", str(tmp_path / "x.ama.jsonl"))


def test_an_unknown_file_says_why_each_format_refused(bank, tmp_path):
    (tmp_path / "x.dat").write_bytes(b"\x00\x01binary")
    with pytest.raises(CommandError, match="binary file"):
        run("memory_import", "--bank", "user-alice", "--input", str(tmp_path / "x.dat"))
    (tmp_path / "y.txt").write_text("just some words\n")
    with pytest.raises(CommandError, match="not AMA or AgentOS NDJSON"):
        run("memory_import", "--bank", "user-alice", "--input", str(tmp_path / "y.txt"))


def test_amplihack_round_trip_keeps_types_metadata_times_source_and_layer(bank, make_bank, tmp_path):
    from datetime import UTC, datetime

    from portability.services.exporter import archive_export_as

    when = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    for text, fact in (("the sky is blue", "world"), ("I met Ann", "experience"), ("Ann likes tea", "observation")):
        memory_retain(bank=bank, text=text, actor="t", fact_type=fact, metadata={"k": fact}, occurred_at=when,
                      source="chat:1", memory_layer="episodic", extract_entities=False)
    archive_export_as(bank=bank, dest=tmp_path / "a.json", fmt="amplihack", actor="t")
    copy = make_bank("copy")
    _, _, records = open_archive(tmp_path / "a.json")
    assert archive_import(bank=copy, records=records, actor="t", extract_entities=False).imported == 3
    for original in Memory.objects.filter(bank=bank):
        back = Memory.objects.get(bank=copy, memory_id=original.memory_id)
        assert (back.fact_type, back.occurred_at, back.source, back.memory_layer) == (
            original.fact_type, original.occurred_at, original.source, original.memory_layer)
        assert back.metadata["k"] == original.metadata["k"]
