"""A vector PostgreSQL cannot store (NaN, infinity, past single precision) is one bad line, reported
with its number; it must not stop the batch it sits in, whatever format carried it."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import pytest

from banks.models import Memory
from portability.formats.agentos import trace_record
from portability.formats.registry import open_archive
from portability.records import MemoryRecord, record_problem, storable_vector
from portability.services import archive_import


@pytest.mark.parametrize(("values", "ok"), [
    ([0.1, -0.2, 0.0], True),
    ([3.4e38, -3.4e38], True),
    ([1e-50, 0.5], True),  # underflows to 0 in float4: harmless
    ([1e39, 0.5], False),
    ([-1e39, 0.5], False),
    ([float("nan"), 0.5], False),
    ([0.5, float("inf")], False),
    ([1e308, 1e308], False),
])
def test_storable_vectors(values: list[float], ok: bool) -> None:
    assert storable_vector(values) is ok


def test_a_nan_in_base64_float32_is_a_bad_record_not_a_failed_batch() -> None:
    raw = base64.b64encode(struct.pack("<3f", 0.5, float("nan"), 0.25)).decode()
    record = trace_record({"id": "t1", "content": "a trace", "embedding": raw}, 1)
    assert isinstance(record, MemoryRecord)
    assert record_problem(record) == "field 'embedding' must hold finite numbers within single precision (±3.4e38)"


@pytest.mark.django_db
def test_an_ama_line_with_a_vector_past_float4_is_reported_and_the_rest_is_stored(make_bank, tmp_path: Path) -> None:
    path = tmp_path / "a.ama.jsonl"
    lines = [{"_ama_version": 1, "bank_id": "x", "memory_count": 3},
             {"id": "good-1", "text": "the first good line", "embedding": [0.1] * 384, "embedding_model": "x"},
             {"id": "huge", "text": "a vector too big for float4", "embedding": [1e39] + [0.1] * 383,
              "embedding_model": "x"},
             {"id": "good-2", "text": "the second good line"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    bank = make_bank("vectors")
    _, header, records = open_archive(path)
    report = archive_import(bank=bank, records=records, actor="test", extract_entities=False)
    assert report.imported == 2 and report.invalid == 1
    assert report.errors[0]["line"] == 3 and "single precision" in report.errors[0]["reason"]
    assert set(Memory.objects.filter(bank=bank).values_list("memory_id", flat=True)) == {"good-1", "good-2"}
