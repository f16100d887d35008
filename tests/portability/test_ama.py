"""The AMA reader: the shared sample, every header error, bad lines, streaming. The writer, atomic writes
and the real astrocyte package are tests/portability/test_ama_writer.py."""

from __future__ import annotations

import io
import json
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from portability.formats.ama import (
    DEFAULT_MAX_LINE_BYTES,
    AmaHeaderError,
    read_ama,
)
from portability.records import EntityRecord, LinkRecord, MemoryRecord, RecordError
from tests.portability.ama_lines import HEADER, SAMPLE, archive, only_records, read

# --- the shared sample --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["rb", "r"])
def test_the_shared_sample_reads_completely(mode: str) -> None:
    with SAMPLE.open(mode, **({} if mode == "rb" else {"encoding": "utf-8"})) as fp:
        header, items = read_ama(fp)
        records = only_records(list(items))
    assert (header.format, header.bank_id, header.provider, header.memory_count) == ("ama", "user-ines-42", "mem0", 12)
    assert header.exported_at == "2026-04-03T12:00:00Z" and header.extra == {}
    assert len(records) == 12
    assert [r.memory_id for r in records] == [f"m-{i:04d}" for i in range(1, 13)]
    assert [r.position for r in records] == list(range(2, 14))  # the header is line 1
    r = {rec.memory_id: rec for rec in records}

    one = r["m-0001"]
    assert one.text == "Inès prefers oat milk in her coffee." and one.fact_type == "world"
    assert one.tags == ["preference", "food"] and one.metadata == {"confidence": 0.92}
    assert one.occurred_at == datetime(2026, 3, 14, 8, 15, tzinfo=UTC)
    assert one.created_at == datetime(2026, 3, 14, 8, 16, 2, tzinfo=UTC) and one.source == "chat:session-17"
    assert one.entities == [EntityRecord(name="Inès Duarte", entity_type="person", aliases=["Inès", "Ines"])]

    two = r["m-0002"]
    assert two.occurred_at == datetime(2026, 3, 20, 14, 40, tzinfo=UTC)
    assert two.occurred_at.utcoffset() == timedelta(hours=2)  # the offset is kept, the instant is right
    assert two.entities == [EntityRecord(name="Django", entity_type="technology", aliases=[])]

    assert r["m-0003"].fact_type == "observation" and r["m-0003"].occurred_at is None
    assert r["m-0003"].metadata == {"_obs_source_ids": ["m-0002", "m-0009"], "_obs_trend": "stable"}
    assert r["m-0004"].text == "東京の定例会議は毎週火曜日10時に始まる — the Tokyo stand-up starts Tuesdays at 10:00 JST 🗓️"
    assert r["m-0004"].tags == ["日本", "meetings"] and r["m-0004"].entities[0].name == "東京オフィス"
    assert r["m-0005"].tags == [] and r["m-0005"].metadata == {}

    six = r["m-0006"]
    assert (six.text, six.fact_type, six.tags, six.metadata, six.occurred_at, six.created_at, six.source,
            six.entities, six.embedding) == ("Prefers dark mode in every editor.", None, [], {}, None, None, None,
                                             [], None)
    assert r["m-0007"].text == one.text  # a duplicate in content is still a record; the importer decides
    assert r["m-0008"].embedding == [0.0123, -0.2251, 0.3304, 0.0871, -0.1432, 0.5021, -0.0007, 0.2919]

    nine = r["m-0009"]
    assert nine.text == ('Quote from the user: "ship it on Friday" — later corrected to "actually, Monday".\n'
                         "Second line, Arabic greeting: مرحبا بك")
    assert nine.occurred_at == datetime(2026, 3, 27, 17, 5, 31, 250000, tzinfo=UTC)
    assert nine.metadata == {"_source": "api", "_retain_id": "r-77", "thread": {"id": "t-5", "turn": 3}}
    assert r["m-0010"].text == "Zoë is allergic to peanuts; her usual café order is crème brûlée."

    eleven = r["m-0011"]
    assert (eleven.fact_type, eleven.tags, eleven.metadata, eleven.occurred_at) == (None, [], {}, None)
    twelve = r["m-0012"]
    assert twelve.occurred_at == datetime(2025, 12, 25, tzinfo=UTC)  # date-only → midnight UTC
    assert twelve.entities == [EntityRecord(name="Porto", entity_type="location", aliases=[]),
                               EntityRecord(name="Duarte family", entity_type="organization", aliases=[])]


# --- the header ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "AMA file is empty"),
        (b"\n", "AMA file is empty"),
        (b"   \n" + json.dumps(HEADER).encode() + b"\n", "AMA file is empty"),
        (b'{"bank_id": "b"}\n', "Not a valid AMA file (missing _ama_version)"),
        (b"[1, 2]\n", "Not a valid AMA file (missing _ama_version)"),
        (b'"_ama_version"\n', "Not a valid AMA file (missing _ama_version)"),
        (b'{"_ama_version": 2}\n', "Unsupported AMA version 2 (expected 1)"),
        (b'{"_ama_version": 0}\n', "Unsupported AMA version 0 (expected 1)"),
        (b'{"_ama_version": "1"}\n', 'Unsupported AMA version "1" (expected 1)'),
        (b'{"_ama_version": true}\n', "Unsupported AMA version true (expected 1)"),
        (b'{"_ama_version": null}\n', "Unsupported AMA version null (expected 1)"),
        (b'{"_ama_version": 1, "bank_id": 42}\n', "AMA header field 'bank_id' must be a string"),
        (b'{"_ama_version": 1, "bank_id": null}\n', "AMA header field 'bank_id' must be a string"),
        (b'{"_ama_version": 1, "exported_at": 1700000000}\n', "AMA header field 'exported_at' must be a string"),
        (b'{"_ama_version": 1, "provider": ["mem0"]}\n', "AMA header field 'provider' must be a string"),
        (b'{"_ama_version": 1, "memory_count": "12"}\n', "AMA header field 'memory_count' must be an integer"),
        (b'{"_ama_version": 1, "memory_count": 12.0}\n', "AMA header field 'memory_count' must be an integer"),
        (b'{"_ama_version": 1, "memory_count": true}\n', "AMA header field 'memory_count' must be an integer"),
    ],
)
def test_header_errors_carry_astrocytes_messages(content: bytes, message: str) -> None:
    with pytest.raises(AmaHeaderError) as caught:
        read(content)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_header_errors_of_our_own() -> None:
    with pytest.raises(AmaHeaderError, match="^AMA header is not valid JSON: "):
        read("not json\n")
    with pytest.raises(AmaHeaderError, match="^AMA header is not UTF-8: "):
        read(b'{"_ama_version": 1, "bank_id": "\xff"}\n')
    with pytest.raises(AmaHeaderError, match="^AMA header is not valid JSON: nested too deeply$"):
        read("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(AmaHeaderError, match="^AMA header line is longer than 64 bytes$"):
        read(json.dumps({**HEADER, "bank_id": "b" * 100}) + "\n", max_line_bytes=64)


def test_headers_that_are_accepted() -> None:
    header, items = read('{"_ama_version": 1}\n{"id": "a", "text": "minimal headers are fine"}')
    assert (header.bank_id, header.provider, header.memory_count) == (None, None, None)
    assert only_records(items)[0].text == "minimal headers are fine"  # and no final newline is needed
    header, _ = read("\ufeff" + json.dumps({**HEADER, "_ama_version": 1.0, "origin": {"tool": "t"}}) + "\r\n")
    assert header.memory_count == 1 and header.extra == {"origin": {"tool": "t"}}
    header, items = read(json.dumps(HEADER))
    assert header.bank_id == "b" and items == []


# --- memory lines -------------------------------------------------------------------------------


BAD_LINES = [
    ('{"id": "b", "text": "broken"', None),
    ("[1, 2]", "missing required fields (id, text)"),
    ('"just a string"', "missing required fields (id, text)"),
    ('{"text": "no id"}', "missing required fields (id, text)"),
    ('{"id": "no-text"}', "missing required fields (id, text)"),
    ('{"id": "t", "text": 5}', "field 'text' must be a string"),
    ('{"id": "t", "text": null}', "field 'text' must be a string"),
    ('{"id": {"x": 1}, "text": "object id"}', "field 'id' must be a string or a number"),
    ('{"id": "' + "i" * 256 + '", "text": "long id"}', "field 'id' is longer than 255 characters"),
    ('{"id": "t", "text": "x", "fact_type": 3}', "field 'fact_type' must be a string"),
    ('{"id": "t", "text": "x", "tags": "one"}', "field 'tags' must be a list of strings"),
    ('{"id": "t", "text": "x", "tags": ["a", 2]}', "field 'tags' must be a list of strings"),
    ('{"id": "t", "text": "x", "metadata": [1]}', "field 'metadata' must be an object"),
    ('{"id": "t", "text": "x", "source": 7}', "field 'source' must be a string"),
    ('{"id": "t", "text": "x", "memory_layer": []}', "field 'memory_layer' must be a string"),
    ('{"id": "t", "text": "x", "embedding": [1, "x"]}', "field 'embedding' must be a list of numbers"),
    ('{"id": "t", "text": "x", "embedding": [true, 0.5]}', "field 'embedding' must be a list of numbers"),
    ('{"id": "t", "text": "x", "embedding": [NaN, 0.5]}', "field 'embedding' must be a list of numbers"),
    ('{"id": "t", "text": "x", "embedding": [0.5, Infinity]}', "field 'embedding' must be a list of numbers"),
    ('{"id": "t", "text": "x", "embedding": [0.5, -Infinity, Infinity]}', "field 'embedding' must be a list of numbers"),
    ('{"id": "t", "text": "x", "embedding": "0.1,0.2"}', "field 'embedding' must be a list of numbers"),
    ('{"id": "t", "text": "x", "entities": {"name": "A"}}', "field 'entities' must be a list"),
    ('{"id": "t", "text": "x", "entities": [{"entity_type": "person"}]}',
     "field 'entities' must hold objects with a non-empty 'name'"),
    ('{"id": "t", "text": "x", "entities": [{"name": "A", "entity_type": 1}]}',
     "field 'entities[].entity_type' must be a string"),
    ('{"id": "t", "text": "x", "entities": [{"name": "A", "aliases": "a"}]}',
     "field 'entities[].aliases' must be a list of strings"),
    ('{"id": "t", "text": "x", "links": [{"target_id": "m1"}]}',
     "field 'links' must hold objects with string 'target_id' and 'link_type'"),
    ('{"id": "t", "text": "x", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}", "invalid JSON: nested too deeply"),
]


@pytest.mark.parametrize(("line", "reason"), BAD_LINES, ids=[f"bad-line-{i}" for i in range(len(BAD_LINES))])
def test_each_bad_line_is_reported_with_its_number_and_reason(line: str, reason: str | None) -> None:
    _, items = read(archive('{"id": "before", "text": "good"}', line, '{"id": "after", "text": "good too"}'))
    assert [(i.position, i.memory_id) for i in items if isinstance(i, MemoryRecord)] == [(2, "before"), (4, "after")]
    [error] = [i for i in items if isinstance(i, RecordError)]
    assert error.position == 3
    if reason is None:
        assert error.reason.startswith("invalid JSON: ")
    else:
        assert error.reason == reason


def test_bad_lines_in_one_archive_keep_their_own_numbers() -> None:
    lines = [line for line, _ in BAD_LINES]
    good = [json.dumps({"id": f"g{i}", "text": f"good {i}"}) for i in range(len(lines))]
    mixed = [x for pair in zip(good, lines, strict=True) for x in pair]
    _, items = read(archive(*mixed))
    errors = [i for i in items if isinstance(i, RecordError)]
    assert [e.position for e in errors] == [3 + 2 * i for i in range(len(lines))]
    assert [i.memory_id for i in items if isinstance(i, MemoryRecord)] == [f"g{i}" for i in range(len(lines))]


def test_blank_lines_are_skipped_but_counted() -> None:
    _, items = read(archive("", '{"id": "a", "text": "x"}', "   \t", "", '{"id": "b", "text": "y"}', ""))
    assert [(r.position, r.memory_id) for r in only_records(items)] == [(3, "a"), (6, "b")]


def test_non_utf8_and_crlf_lines() -> None:
    body = json.dumps(HEADER).encode() + b"\r\n" + b'{"id": "a", "text": "caf\xe9"}\r\n' + \
        b'{"id": "b", "text": "ok"}\r\n'
    _, items = read(body)
    assert isinstance(items[0], RecordError) and items[0].position == 2
    assert items[0].reason.startswith("not UTF-8: invalid continuation byte")
    assert isinstance(items[1], MemoryRecord) and items[1].text == "ok"


def test_ids_of_any_scalar_type() -> None:
    lines = ['{"id": 17, "text": "a"}', '{"id": 1.5, "text": "b"}', '{"id": true, "text": "c"}',
             '{"id": null, "text": "d"}', '{"id": "", "text": "e"}', '{"id": "k-1", "text": "f"}']
    _, items = read(archive(*lines))
    # null and "" carry no identity: the importer mints an id, as Astrocyte does for every line.
    assert [r.memory_id for r in only_records(items)] == ["17", "1.5", "true", None, None, "k-1"]


def test_times_unknown_keys_and_our_extensions() -> None:
    line = {
        "id": "x", "text": "t", "occurred_at": "2026-01-02T03:04:05.123456-05:00", "created_at": "2026-01-02",
        "retained_at": "2026-01-02T03:04:05", "memory_layer": "fact", "embedding_model": "hashing-8",
        "embedding": [1, 2.5], "bank_id": "per-line bank ids are redundant", "importance": 0.7, "zzz": [1],
        "links": [{"target_id": "y", "link_type": "similar_to", "confidence": 0.8, "metadata": {"why": "cosine"}},
                  {"target_id": "z", "link_type": "derives_from"}],
    }
    _, items = read(archive(json.dumps(line), json.dumps({"id": "w", "text": "t", "occurred_at": "yesterday",
                                                          "created_at": 1700000000, "retained_at": ""})))
    record, odd = only_records(items)
    assert record.occurred_at == datetime(2026, 1, 2, 8, 4, 5, 123456, tzinfo=UTC)
    assert record.created_at == datetime(2026, 1, 2, tzinfo=UTC)
    assert record.retained_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)  # naive means UTC
    assert (record.memory_layer, record.embedding_model, record.embedding) == ("fact", "hashing-8", [1.0, 2.5])
    assert record.links == [LinkRecord("y", "similar_to", 0.8, {"why": "cosine"}), LinkRecord("z", "derives_from")]
    assert record.metadata == {"_ama_extra": {"importance": 0.7, "zzz": [1]}}
    assert (odd.occurred_at, odd.created_at, odd.retained_at) == (None, None, None)
    assert odd.metadata == {"_ama_unparsed_occurred_at": "yesterday", "_ama_unparsed_created_at": 1700000000}


def test_timestamps_spelled_every_way_astrocyte_accepts() -> None:
    spellings = {
        "2026-03-14T08:15:00Z": datetime(2026, 3, 14, 8, 15, tzinfo=UTC),
        "2026-03-14T08:15:00z": datetime(2026, 3, 14, 8, 15, tzinfo=UTC),
        "2026-03-14T08:15:00+00:00": datetime(2026, 3, 14, 8, 15, tzinfo=UTC),
        "2026-03-14T10:15:00+02:00": datetime(2026, 3, 14, 8, 15, tzinfo=UTC),
        "2026-03-14 08:15:00.5": datetime(2026, 3, 14, 8, 15, 0, 500000, tzinfo=UTC),
        "2026-03-14": datetime(2026, 3, 14, tzinfo=UTC),
    }
    lines = [json.dumps({"id": str(i), "text": "t", "occurred_at": s}) for i, s in enumerate(spellings)]
    _, items = read(archive(*lines))
    assert [r.occurred_at for r in only_records(items)] == list(spellings.values())
    assert all(r.occurred_at and r.occurred_at.tzinfo is not None for r in only_records(items))


def test_metadata_already_holding_extras_is_merged_not_overwritten() -> None:
    line = {"id": "a", "text": "t", "metadata": {"_ama_extra": {"old": 1}}, "new": 2}
    _, items = read(archive(json.dumps(line)))
    assert only_records(items)[0].metadata == {"_ama_extra": {"old": 1, "new": 2}}


# --- streaming ----------------------------------------------------------------------------------


class GeneratorFile(io.RawIOBase):
    """A binary file fed by a generator of byte chunks, counting how many chunks were taken."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.pending = b""
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while not self.pending:
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.served += 1
            self.pending = chunk
        n = min(len(target), len(self.pending))
        target[:n], self.pending = self.pending[:n], self.pending[n:]
        return n


def numbered_archive(count: int) -> Iterator[bytes]:
    yield json.dumps({**HEADER, "memory_count": count}).encode() + b"\n"
    for i in range(count):
        yield json.dumps({"id": i, "text": f"memory number {i}", "tags": ["t"]}).encode() + b"\n"


def test_the_reader_does_not_read_ahead() -> None:
    raw = GeneratorFile(numbered_archive(1_000_000))
    header, items = read_ama(io.BufferedReader(raw, buffer_size=64))
    assert header.memory_count == 1_000_000 and raw.served <= 3  # only the header so far
    first = [next(items) for _ in range(3)]
    assert [r.memory_id for r in first] == ["0", "1", "2"]  # type: ignore[union-attr]
    assert raw.served <= 6


def test_a_text_file_streams_too() -> None:
    raw = GeneratorFile(numbered_archive(1_000_000))
    header, items = read_ama(io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8"))
    assert next(items).memory_id == "0"  # type: ignore[union-attr]
    assert raw.served < 1000


def test_memory_stays_flat_over_a_long_archive() -> None:
    tracemalloc.start()
    try:
        header, items = read_ama(io.BufferedReader(GeneratorFile(numbered_archive(50_000))))
        count = sum(1 for item in items if isinstance(item, MemoryRecord))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 50_000 == header.memory_count
    assert peak < 1024 * 1024, peak  # the archive is about 2.5 MB of text and 50 000 records


def test_an_overlong_line_is_dropped_without_being_held_whole() -> None:
    def chunks() -> Iterator[bytes]:
        yield json.dumps(HEADER).encode() + b"\n"
        yield b'{"id": "huge", "text": "'
        for _ in range(512):  # 32 MiB in total, never in memory at once
            yield b"x" * 65536
        yield b'"}\n{"id": "after", "text": "still read"}\n'

    tracemalloc.start()
    try:
        _, items = read_ama(io.BufferedReader(GeneratorFile(chunks())), max_line_bytes=1024 * 1024)
        result = list(items)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result[0] == RecordError(2, "line longer than 1048576 bytes")
    assert isinstance(result[1], MemoryRecord) and (result[1].memory_id, result[1].position) == ("after", 3)
    assert peak < 6 * 1024 * 1024, peak  # a few times the cap, far from the 32 MiB of the line


def test_line_cap_boundaries_in_bytes_for_binary_and_text_files() -> None:
    text = "é" * 100  # 200 bytes in UTF-8, 100 characters
    line = json.dumps({"id": "a", "text": text}, ensure_ascii=False)
    size = len(line.encode())
    body = json.dumps(HEADER) + "\n" + line + "\n"
    assert len(json.dumps(HEADER)) < size - 1
    for make in (lambda: io.BytesIO(body.encode()), lambda: io.StringIO(body)):
        _, ok = read_ama(make(), max_line_bytes=size)
        assert isinstance(next(ok), MemoryRecord)
        _, too_long = read_ama(make(), max_line_bytes=size - 1)
        assert next(too_long) == RecordError(2, f"line longer than {size - 1} bytes")
    assert DEFAULT_MAX_LINE_BYTES == 10 * 1024 * 1024
