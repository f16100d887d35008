"""A big import writes its batches on a thread of its own, in order, while the next one is read and
embedded; a batch that fails stops the import with that failure, after the batches before it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from banks.models import Memory
from portability.formats.registry import open_archive
from portability.services import archive_import

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def big_from_50(settings):
    settings.MEMORYHUB_OWN_VECTOR_INDEX_MIN = 50


def _archive(path: Path, n: int) -> Path:
    with path.open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "x", "memory_count": n}) + "\n")
        for i in range(n):
            fp.write(json.dumps({"id": f"m{i:04d}", "text": f"note {i} about the writer thread and batch {i // 25}"})
                     + "\n")
    return path


def _import(bank, path: Path, progress):  # noqa: ANN001, ANN202
    _, header, records = open_archive(path)
    return archive_import(bank=bank, records=records, actor="test", extract_entities=False, batch_size=25,
                          expected=header.memory_count, progress=progress)


def test_a_big_import_writes_its_batches_on_the_writer_thread_in_order(make_bank, big_from_50, tmp_path):
    bank = make_bank("big")
    seen: list[tuple[str, int]] = []
    report = _import(bank, _archive(tmp_path / "a.jsonl", 200),
                     lambda r: seen.append((threading.current_thread().name, r.imported)))
    assert report.imported == 200 and Memory.objects.filter(bank=bank).count() == 200
    assert [n for _, n in seen] == [25 * i for i in range(1, 9)]
    assert {name for name, _ in seen} != {threading.current_thread().name}
    assert all(name.startswith("import-writer") for name, _ in seen)


def test_a_failing_batch_stops_the_import_after_the_batches_before_it(make_bank, big_from_50, tmp_path):
    bank = make_bank("big")

    def progress(report):  # noqa: ANN001, ANN202
        if report.imported == 75:
            raise RuntimeError("the job was cancelled")

    with pytest.raises(RuntimeError, match="cancelled"):
        _import(bank, _archive(tmp_path / "a.jsonl", 200), progress)
    # Batches 1-3 committed before the failure was reported; nothing after them was written.
    assert Memory.objects.filter(bank=bank).count() == 75
    # The writer thread gave its database connection back.
    assert not any(t.name.startswith("import-writer") for t in threading.enumerate())
