"""The AMA reader and writer: the shared sample, every header error, bad lines, streaming, atomic writes,
and the real astrocyte package reading what we write and writing what we read."""

from __future__ import annotations

import asyncio
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from portability.formats.ama import AmaCountMismatch, AmaHeaderError, atomic_write, read_ama, write_ama
from portability.records import ArchiveHeader, EntityRecord, MemoryRecord, RecordError
from tests.portability.fixtures import FIXTURES

HEADER = '{"_ama_version": 1, "bank_id": "b", "exported_at": "2026-01-01T00:00:00Z", "provider": "x", "memory_count": 1}\n'


def read(text: str, **kw):
    header, items = read_ama(io.BytesIO(text.encode("utf-8")), **kw)
    return header, list(items)


def test_the_shared_sample_reads_completely():
    with (FIXTURES / "sample.ama.jsonl").open("rb") as fp:
        header, items = read_ama(fp)
        items = list(items)
    assert (header.bank_id, header.provider, header.memory_count) == ("user-ines-42", "mem0", 12)
    assert all(isinstance(i, MemoryRecord) for i in items) and len(items) == 12
    by_id = {r.memory_id: r for r in items}
    assert by_id["m-0004"].text.startswith("東京の定例会議") and "🗓️" in by_id["m-0004"].text
    assert by_id["m-0011"].fact_type is None and by_id["m-0011"].tags == [] and by_id["m-0011"].metadata == {}
    assert by_id["m-0002"].occurred_at == datetime(2026, 3, 20, 14, 40, tzinfo=UTC)
    assert by_id["m-0012"].occurred_at == datetime(2025, 12, 25, tzinfo=UTC)
    assert by_id["m-0008"].embedding == [0.0123, -0.2251, 0.3304, 0.0871, -0.1432, 0.5021, -0.0007, 0.2919]
    assert by_id["m-0006"].fact_type is None and by_id["m-0006"].created_at is None
    assert "\n" in by_id["m-0009"].text and by_id["m-0009"].metadata["thread"] == {"id": "t-5", "turn": 3}
    assert by_id["m-0003"].fact_type == "observation"
    assert any(e.aliases == [] for r in items for e in r.entities)


@pytest.mark.parametrize(
    ("first_line", "message"),
    [
        ("", "AMA file is empty"),
        ("\n", "AMA file is empty"),
        ('{"bank_id": "b"}\n', "Not a valid AMA file (missing _ama_version)"),
        ('{"_ama_version": 2}\n', "Unsupported AMA version 2 (expected 1)"),
        ('{"_ama_version": 1, "provider": 5}\n', "AMA header field 'provider' must be a string"),
        ('{"_ama_version": 1, "bank_id": []}\n', "AMA header field 'bank_id' must be a string"),
        ('{"_ama_version": 1, "memory_count": "12"}\n', "AMA header field 'memory_count' must be an integer"),
        ("not json\n", "AMA header is not valid JSON"),
    ],
)
def test_header_errors(first_line, message):
    with pytest.raises(AmaHeaderError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read(first_line)


def test_bad_lines_are_reported_with_numbers_and_good_ones_come_through():
    body = "\n".join([
        '{"id": 1, "text": "integer id is fine"}',
        "",
        '{"id": "a", "text": "ok", "embedding": [1, "x"]}',
        '{"text": "no id"}',
        "[1, 2]",
        '{"id": "b", "text": "broken"',
        '{"id": "c", "text": "bad time", "occurred_at": "yesterday", "zzz": 1}',
        '{"id": "d", "text": 5}',
        '{"id": "e", "text": "tags", "tags": "x"}',
    ])
    _, items = read(HEADER + body + "\n")
    errors = {i.position: i.reason for i in items if isinstance(i, RecordError)}
    good = [i for i in items if isinstance(i, MemoryRecord)]
    assert [g.memory_id for g in good] == ["1", "c"]
    assert errors == {
        4: "field 'embedding' must be a list of numbers",
        5: "missing required fields (id, text)",
        6: "missing required fields (id, text)",
        7: errors[7],
        9: "field 'text' must be a string",
        10: "field 'tags' must be a list of strings",
    }
    assert errors[7].startswith("invalid JSON")
    assert good[1].metadata == {"_ama_unparsed_occurred_at": "yesterday", "_ama_extra": {"zzz": 1}}


def test_an_overlong_line_is_skipped_without_loading_it():
    long_line = '{"id": "big", "text": "' + "x" * 5000 + '"}\n'
    _, items = read(HEADER + long_line + '{"id": "after", "text": "still read"}\n', max_line_bytes=1000)
    assert isinstance(items[0], RecordError) and items[0].reason == "line longer than 1000 bytes"
    assert items[1].memory_id == "after" and items[1].position == 3


class CountingReader(io.RawIOBase):
    """A file that records how far it has been read, to prove the reader does not read ahead."""

    def __init__(self, lines):
        self.source = iter(lines)
        self.buffer = b""
        self.lines_served = 0

    def readable(self):
        return True

    def readinto(self, target):
        while not self.buffer:
            line = next(self.source, None)
            if line is None:
                return 0
            self.lines_served += 1
            self.buffer = line
        n = min(len(target), len(self.buffer))
        target[:n], self.buffer = self.buffer[:n], self.buffer[n:]
        return n


def test_the_reader_streams():
    def lines():
        yield HEADER.encode()
        for i in range(1_000_000):
            yield json.dumps({"id": i, "text": f"memory {i}"}).encode() + b"\n"

    raw = CountingReader(lines())
    header, items = read_ama(io.BufferedReader(raw, buffer_size=64))
    first_three = [next(items) for _ in range(3)]
    assert [r.memory_id for r in first_three] == ["0", "1", "2"]
    assert raw.lines_served < 10


def test_writer_round_trip_and_header_types(tmp_path):
    records = [
        MemoryRecord(text="Zoë likes crème brûlée", memory_id="m1", fact_type="world", tags=["food"],
                     metadata={"k": 1}, occurred_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), source="chat",
                     entities=[EntityRecord(name="Zoë", entity_type="PERSON", aliases=["Zoe"])],
                     embedding=[0.5, 0.25], embedding_model="hashing-2"),
        MemoryRecord(text="second", memory_id="m2"),
    ]
    buffer = io.StringIO()
    count = write_ama(buffer, header=ArchiveHeader(format="ama", bank_id="b", memory_count=2), records=records,
                      include_embeddings=True)
    assert count == 2
    lines = buffer.getvalue().splitlines()
    head = json.loads(lines[0])
    assert list(head) == ["_ama_version", "bank_id", "exported_at", "provider", "memory_count"]
    assert head["memory_count"] == 2 and isinstance(head["exported_at"], str)
    _, back = read(buffer.getvalue())
    assert back[0].text == records[0].text and back[0].entities == records[0].entities
    assert back[0].embedding == [0.5, 0.25] and back[0].occurred_at == records[0].occurred_at
    no_extras = io.StringIO()
    write_ama(no_extras, header=ArchiveHeader(format="ama", bank_id="b", memory_count=2), records=records,
              include_embeddings=False, include_entities=False)
    assert "embedding" not in no_extras.getvalue() and "entities" not in no_extras.getvalue()


def test_writer_refuses_a_count_that_does_not_match():
    with pytest.raises(AmaCountMismatch):
        write_ama(io.StringIO(), header=ArchiveHeader(format="ama", memory_count=3),
                  records=[MemoryRecord(text="x", memory_id="1")])


def test_atomic_write_leaves_no_final_file_on_failure(tmp_path):
    dest = tmp_path / "out.ama.jsonl"
    with pytest.raises(RuntimeError):
        with atomic_write(dest) as fp:
            fp.write("partial")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
    with atomic_write(dest) as fp:
        fp.write("whole\n")
    assert dest.read_text() == "whole\n" and oct(dest.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir()] == ["out.ama.jsonl"]


def _brain():
    from astrocyte import Astrocyte

    return Astrocyte.from_config_dict({"provider_tier": "storage", "vector_store": "in_memory",
                                       "llm_provider": "mock"})


def test_astrocyte_imports_what_we_write(tmp_path: Path):
    records = [MemoryRecord(text=f"Distinct memory number {i} about topic {i * 7}", memory_id=f"m{i}",
                            fact_type="experience", tags=["t"], metadata={"n": i}) for i in range(5)]
    path = tmp_path / "ours.ama.jsonl"
    with atomic_write(path) as fp:
        write_ama(fp, header=ArchiveHeader(format="ama", bank_id="ours", memory_count=5), records=records)
    result = asyncio.run(_brain().import_bank("target", str(path), allowed_roots=[str(tmp_path)]))
    assert (result.imported, result.skipped, result.errors) == (5, 0, 0)


def test_we_read_what_astrocyte_writes(tmp_path: Path):
    brain = _brain()

    async def build():
        for text in ("Alice likes jazz.", "Bob runs marathons.", "Carol speaks Portuguese."):
            await brain.retain(text, "src", tags=["people"], metadata={"k": "v"})
        return await brain.export_bank("src", str(tmp_path / "theirs.ama.jsonl"), allowed_roots=[str(tmp_path)])

    assert asyncio.run(build()) == 3
    with (tmp_path / "theirs.ama.jsonl").open("rb") as fp:
        header, items = read_ama(fp)
        items = list(items)
    assert header.memory_count == 3 and all(isinstance(i, MemoryRecord) for i in items)
    assert sorted(i.text for i in items) == ["Alice likes jazz.", "Bob runs marathons.", "Carol speaks Portuguese."]
    assert all(i.tags == ["people"] and i.metadata["k"] == "v" for i in items)
