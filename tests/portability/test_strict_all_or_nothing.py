"""Strict means all or nothing: every rule a write applies is checked before the first line is written.

A non-strict import keeps every good line of a batch that holds a bad one, whatever the bad line holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from banks.models import Bank, Memory
from portability.formats.registry import open_archive
from portability.services import archive_import
from tests.portability.fixtures import bank_folder

pytestmark = pytest.mark.django_db

HEADER = {"_ama_version": 1, "bank_id": "src", "exported_at": "2026-01-01T00:00:00Z", "provider": "x",
          "memory_count": 0}


def deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"k": value}
    return value


# Each is refused only when written today: parse errors and repeated ids were all the pre-pass saw.
BAD = {
    "nul": {"id": "bad", "text": "a NUL \u0000 inside"},
    "deep": {"id": "bad", "text": "nested metadata", "metadata": deep(40)},
    "empty": {"id": "bad", "text": "   "},
    "year": {"id": "bad", "text": "a time no reader can show", "occurred_at": "0001-01-01T00:00:00+05:00"},
}


def archive(path: Path, bad_line: str) -> Path:
    """Two good lines, the bad one, two more good lines (the bad one is line 4: the header is line 1)."""
    good = [{"id": f"g{i}", "text": f"good fact number {i}"} for i in range(4)]
    lines = [json.dumps(HEADER), *(json.dumps(x) for x in good[:2]), bad_line, *(json.dumps(x) for x in good[2:])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def nan_line() -> str:
    # What Python's json (and many writers) emit for a float that is not a number: not JSON, read anyway.
    return '{"id": "bad", "text": "metadata with NaN", "metadata": {"score": NaN, "top": Infinity}}'


def lines_for(kind: str) -> str:
    return nan_line() if kind == "nan" else json.dumps(BAD[kind])


@pytest.mark.parametrize("kind", [*sorted(BAD), "nan"])
def test_strict_writes_nothing_when_one_line_breaks_a_write_rule(kind, bank, tmp_path):
    path = archive(tmp_path / "a.ama.jsonl", lines_for(kind))
    report = archive_import(bank=bank, records=open_archive(path)[2], actor="t", strict=True)
    assert report.aborted and report.invalid == 1, report.errors
    assert [e["line"] for e in report.errors] == [4]
    assert not Memory.objects.filter(bank=bank).exists()


@pytest.mark.parametrize("kind", [*sorted(BAD), "nan"])
def test_without_strict_every_good_line_of_the_batch_is_kept(kind, bank, tmp_path):
    path = archive(tmp_path / "a.ama.jsonl", lines_for(kind))
    dry = archive_import(bank=bank, records=open_archive(path)[2], actor="t", dry_run=True)
    report = archive_import(bank=bank, records=open_archive(path)[2], actor="t")
    assert (report.imported, report.invalid) == (4, 1) == (dry.imported, dry.invalid), report.errors
    assert [e["line"] for e in report.errors] == [4]
    assert sorted(Memory.objects.filter(bank=bank).values_list("memory_id", flat=True)) == ["g0", "g1", "g2", "g3"]


def test_strict_over_http_is_a_422_naming_each_bad_line(api, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    folder = bank_folder(tmp_path, "user-alice")
    good = [{"id": f"g{i}", "text": f"good fact number {i}"} for i in range(3)]
    lines = [json.dumps(HEADER), json.dumps(good[0]), json.dumps(BAD["nul"]).replace('"bad"', '"b1"'),
             json.dumps(good[1]), nan_line().replace('"bad"', '"b2"'), json.dumps(good[2])]
    (folder / "a.ama.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    response = api.post("/v1/import", {"bank_id": "user-alice", "path": str(folder / "a.ama.jsonl"), "strict": True})
    assert response.status_code == 422, response.content
    body = response.json()
    assert [e["line"] for e in body["line_errors"]] == [3, 5]
    assert not Memory.objects.filter(bank__bank_id="user-alice").exists()
    plain = api.post("/v1/import", {"bank_id": "user-alice", "path": str(folder / "a.ama.jsonl")})
    assert plain.status_code == 200 and plain.json()["imported"] == 3, plain.content


def test_the_cli_refuses_a_strict_import_having_written_nothing(tmp_path):
    path = archive(tmp_path / "a.ama.jsonl", nan_line())
    with pytest.raises(CommandError):
        call_command("memory_import", "--bank", "strict-cli", "--input", str(path), "--strict")
    bank = Bank.objects.filter(bank_id="strict-cli").first()
    assert bank is None or not Memory.objects.filter(bank=bank).exists()
