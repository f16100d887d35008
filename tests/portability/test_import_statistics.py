"""An import refreshes the planner's statistics as the bank doubles, so a growing bank's lookups keep
using the (bank, memory_id) and (bank, content_hash) indexes instead of walking the whole bank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection, transaction

from portability.formats.registry import open_archive
from portability.services import archive_import, importer

pytestmark = pytest.mark.django_db(transaction=True)


def _archive(path: Path, n: int) -> Path:
    with path.open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "x", "memory_count": n}) + "\n")
        for i in range(n):
            fp.write(json.dumps({"id": f"s{i:04d}", "text": f"statistics note {i} in batch {i // 25}"}) + "\n")
    return path


@pytest.fixture
def refreshes(monkeypatch):
    """The stored counts at which the import refreshed statistics (the refresh itself still runs)."""
    seen: list[int] = []
    monkeypatch.setattr(importer, "STATISTICS_FIRST", 50)
    real = importer.memory_statistics_refresh

    def spy() -> None:
        real()
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM banks_memory")
            seen.append(cursor.fetchone()[0])

    monkeypatch.setattr(importer, "memory_statistics_refresh", spy)
    return seen


def _import(bank, path: Path):  # noqa: ANN001, ANN202
    _, header, records = open_archive(path)
    return archive_import(bank=bank, records=records, actor="test", extract_entities=False, batch_size=25)


def test_statistics_are_refreshed_each_time_the_import_doubles_the_bank(make_bank, refreshes, tmp_path):
    bank = make_bank("growing")
    report = _import(bank, _archive(tmp_path / "a.jsonl", 225))
    assert report.imported == 225
    # Before the batches that begin with 50, 100 and 200 memories stored: each time the bank has doubled.
    assert refreshes == [50, 100, 200]
    with connection.cursor() as cursor:
        cursor.execute("SELECT most_common_vals::text FROM pg_stats WHERE tablename = 'banks_memory' "
                       "AND attname = 'bank_id'")
        (common,) = cursor.fetchone()
    # The planner now knows the bank is not a handful of rows.
    assert str(bank.pk) in common.strip("{}").split(",")


def test_no_refresh_inside_a_callers_transaction(make_bank, refreshes, tmp_path):
    bank = make_bank("atomic")
    with transaction.atomic():
        report = _import(bank, _archive(tmp_path / "a.jsonl", 150))
    assert report.imported == 150 and refreshes == []
