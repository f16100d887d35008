"""AMA archives in memory for the reader and writer tests: the shared sample, a header, lines read back."""

from __future__ import annotations

import io
import json
from typing import Any

from portability.formats.ama import read_ama
from portability.records import ArchiveHeader, MemoryRecord, RecordError
from tests.portability.fixtures import FIXTURES

SAMPLE = FIXTURES / "sample.ama.jsonl"
HEADER = {"_ama_version": 1, "bank_id": "b", "exported_at": "2026-01-01T00:00:00Z", "provider": "x",
          "memory_count": 1}


def read(text: str | bytes, **kw: Any) -> tuple[ArchiveHeader, list[MemoryRecord | RecordError]]:
    data = text.encode("utf-8") if isinstance(text, str) else text
    header, items = read_ama(io.BytesIO(data), **kw)
    return header, list(items)


def archive(*lines: str) -> str:
    return json.dumps(HEADER) + "\n" + "".join(line + "\n" for line in lines)


def only_records(items: list[MemoryRecord | RecordError]) -> list[MemoryRecord]:
    assert all(isinstance(i, MemoryRecord) for i in items), [i for i in items if isinstance(i, RecordError)]
    return items  # type: ignore[return-value]
