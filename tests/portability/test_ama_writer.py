"""The AMA writer: what we write reads back the same, its header and line shapes, its refusals, atomic
writes, and the real astrocyte package reading what we write and writing what we read."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from portability.formats.ama import (
    AmaCountMismatch,
    atomic_write,
    read_ama,
    write_ama,
)
from portability.records import ArchiveHeader, EntityRecord, LinkRecord, MemoryRecord, RecordError
from tests.portability.ama_lines import SAMPLE, archive, only_records, read

# --- writing ------------------------------------------------------------------------------------


def full_records() -> list[MemoryRecord]:
    plus_two = timezone(timedelta(hours=2))
    return [
        MemoryRecord(text="Zoë likes crème brûlée 🍮\nand \"quotes\" — 東京", memory_id="m1", fact_type="world",
                     tags=["food", "日本"], metadata={"k": 1, "nested": {"a": [1, None, True]}, "_source": "api"},
                     occurred_at=datetime(2026, 1, 2, 5, 4, 5, 250000, tzinfo=plus_two),
                     created_at=datetime(2026, 1, 3, tzinfo=UTC), retained_at=datetime(2026, 1, 4, tzinfo=UTC),
                     source="chat", memory_layer="fact",
                     entities=[EntityRecord(name="Zoë", entity_type="PERSON", aliases=["Zoe"]),
                               EntityRecord(name="Tokyo", entity_type="LOCATION")],
                     embedding=[0.5, -0.25, 1e-7], embedding_model="hashing-3",
                     links=[LinkRecord(target_id="m2", link_type="similar_to", confidence=0.9,
                                       metadata={"why": "x"})]),
        MemoryRecord(text="second, bare", memory_id="m2"),
        MemoryRecord(text="an observation", memory_id="o1", fact_type="observation",
                     metadata={"_obs_source_ids": ["m1", "m2"]}, memory_layer="observation"),
    ]


def comparable(record: MemoryRecord) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(record).items() if k != "position"}


def test_what_we_write_reads_back_the_same() -> None:
    records = full_records()
    out = io.StringIO()
    header = ArchiveHeader(format="ama", bank_id="b", exported_at="2026-02-02T00:00:00+00:00", provider="memoryhub",
                           memory_count=len(records))
    assert write_ama(out, header=header, records=records, include_embeddings=True) == 3
    back_header, back = read(out.getvalue())
    assert (back_header.bank_id, back_header.exported_at, back_header.provider, back_header.memory_count) == \
        ("b", "2026-02-02T00:00:00+00:00", "memoryhub", 3)
    assert [comparable(r) for r in only_records(back)] == [comparable(r) for r in records]
    assert "Zoë likes crème brûlée 🍮" in out.getvalue()  # raw UTF-8, not \u escapes


def test_the_header_line_has_five_keys_of_the_right_json_types() -> None:
    out = io.StringIO()
    write_ama(out, header=ArchiveHeader(format="ama", bank_id="bank-1", memory_count=0), records=[])
    [line] = out.getvalue().splitlines()
    head = json.loads(line)
    assert list(head) == ["_ama_version", "bank_id", "exported_at", "provider", "memory_count"]
    assert head["_ama_version"] == 1 and type(head["_ama_version"]) is int
    assert type(head["memory_count"]) is int and head["memory_count"] == 0
    assert head["bank_id"] == "bank-1" and head["provider"] == "memoryhub"
    assert datetime.fromisoformat(head["exported_at"]).tzinfo is not None


def test_memory_lines_leave_out_empty_fields_and_keep_the_spec_order() -> None:
    out = io.StringIO()
    write_ama(out, header=ArchiveHeader(format="ama", bank_id="b", memory_count=3), records=full_records(),
              include_embeddings=True)
    first, bare, _obs = (json.loads(x) for x in out.getvalue().splitlines()[1:])
    assert list(first) == ["id", "text", "fact_type", "tags", "metadata", "occurred_at", "created_at", "retained_at",
                           "source", "memory_layer", "entities", "links", "embedding", "embedding_model"]
    assert first["occurred_at"] == "2026-01-02T03:04:05.250000+00:00"
    assert first["entities"][1] == {"name": "Tokyo", "entity_type": "LOCATION", "aliases": []}
    assert bare == {"id": "m2", "text": "second, bare"}


def test_embeddings_and_entities_only_when_asked() -> None:
    out = io.StringIO()
    write_ama(out, header=ArchiveHeader(format="ama", bank_id="b", memory_count=3), records=full_records(),
              include_embeddings=False, include_entities=False)
    first = json.loads(out.getvalue().splitlines()[1])
    assert not {"embedding", "embedding_model", "entities", "links"} & set(first)


def test_naive_datetimes_are_written_as_utc() -> None:
    out = io.StringIO()
    write_ama(out, header=ArchiveHeader(format="ama", bank_id="b", memory_count=1),
              records=[MemoryRecord(text="t", memory_id="a", occurred_at=datetime(2026, 5, 6, 7, 8, 9))])
    assert json.loads(out.getvalue().splitlines()[1])["occurred_at"] == "2026-05-06T07:08:09+00:00"


def test_the_writer_refuses_a_count_that_does_not_match() -> None:
    with pytest.raises(AmaCountMismatch, match="wrote 1 memories but the header says 3"):
        write_ama(io.StringIO(), header=ArchiveHeader(format="ama", memory_count=3),
                  records=[MemoryRecord(text="x", memory_id="1")])
    pulled = 0

    def endless() -> Iterator[MemoryRecord]:
        nonlocal pulled
        while True:
            pulled += 1
            yield MemoryRecord(text="x", memory_id=str(pulled))

    with pytest.raises(AmaCountMismatch, match="more memories than the header's memory_count 2"):
        write_ama(io.StringIO(), header=ArchiveHeader(format="ama", memory_count=2), records=endless())
    assert pulled == 3  # stops at the first record too many


@pytest.mark.parametrize("count", [None, -1, True, "3"])
def test_the_writer_needs_a_real_count(count: Any) -> None:
    with pytest.raises(ValueError, match="memory_count"):
        write_ama(io.StringIO(), header=ArchiveHeader(format="ama", memory_count=count), records=[])


def test_the_writer_refuses_records_without_an_id_and_non_json_numbers() -> None:
    with pytest.raises(ValueError, match="needs an id"):
        write_ama(io.StringIO(), header=ArchiveHeader(format="ama", memory_count=1), records=[MemoryRecord(text="x")])
    with pytest.raises(ValueError):
        write_ama(io.StringIO(), header=ArchiveHeader(format="ama", memory_count=1), include_embeddings=True,
                  records=[MemoryRecord(text="x", memory_id="a", embedding=[float("nan")])])


# --- atomic writes ------------------------------------------------------------------------------


def test_atomic_write_leaves_no_file_when_the_writer_fails(tmp_path: Path) -> None:
    dest = tmp_path / "out.ama.jsonl"
    with pytest.raises(RuntimeError, match="killed"):
        with atomic_write(dest) as fp:
            fp.write("partial line without an end")
            fp.flush()
            assert not dest.exists()  # nothing under the final name while writing
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_keeps_the_previous_file_on_failure(tmp_path: Path) -> None:
    dest = tmp_path / "out.ama.jsonl"
    dest.write_text("the previous export\n")
    with pytest.raises(AmaCountMismatch):
        with atomic_write(dest) as fp:
            write_ama(fp, header=ArchiveHeader(format="ama", bank_id="b", memory_count=5),
                      records=[MemoryRecord(text="only one", memory_id="a")])
    assert dest.read_text() == "the previous export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.ama.jsonl"]


def test_atomic_write_cleans_up_when_the_rename_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_replace(src: str, dst: str, **_: object) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk went away"):
        with atomic_write(tmp_path / "x.jsonl") as fp:
            fp.write("whole\n")
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_success(tmp_path: Path) -> None:
    old_umask = os.umask(0)
    try:
        dest = tmp_path / "sub" / "out.ama.jsonl"
        with atomic_write(dest) as fp:
            fp.write("whole — ünïcode\n")
        with atomic_write(tmp_path / "raw.bin", "wb") as fp:
            fp.write(b"\x00\x01")
    finally:
        os.umask(old_umask)
    assert dest.read_text(encoding="utf-8") == "whole — ünïcode\n"
    assert dest.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in dest.parent.iterdir()] == ["out.ama.jsonl"]
    assert (tmp_path / "raw.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(ValueError):
        with atomic_write(tmp_path / "x", "a"):
            pass


# --- the real astrocyte package -----------------------------------------------------------------


def brain() -> Any:
    from astrocyte import Astrocyte

    return Astrocyte.from_config_dict({"provider_tier": "storage", "vector_store": "in_memory",
                                       "llm_provider": "mock"})


def test_astrocyte_reads_and_imports_what_we_write(tmp_path: Path) -> None:
    from astrocyte.portability import iter_ama_memories, read_ama_header

    topics = ["jazz in Lisbon", "Rust borrow checker", "sourdough starter", "東京の会議", "Zoë's café order"]
    records = [MemoryRecord(text=f"Distinct memory {i}: {topic}", memory_id=f"m{i}", fact_type="experience",
                            tags=["t"], metadata={"n": i}, occurred_at=datetime(2026, 1, i + 1, tzinfo=UTC),
                            entities=[EntityRecord(name=topic)], embedding=[0.1 * i, 0.2],
                            embedding_model="h", memory_layer="fact", retained_at=datetime(2026, 2, 1, tzinfo=UTC))
               for i, topic in enumerate(topics)]
    path = tmp_path / "ours.ama.jsonl"
    with atomic_write(path) as fp:
        write_ama(fp, header=ArchiveHeader(format="ama", bank_id="ours", memory_count=5), records=records,
                  include_embeddings=True)
    header = read_ama_header(str(path), allowed_roots=[str(tmp_path)])
    assert (header.bank_id, header.provider, header.memory_count) == ("ours", "memoryhub", 5)
    theirs = iter_ama_memories(str(path), allowed_roots=[str(tmp_path)])
    assert [m.text for m in theirs] == [r.text for r in records]
    assert [m.id for m in theirs] == [r.memory_id for r in records]
    result = asyncio.run(brain().import_bank("target", str(path), allowed_roots=[str(tmp_path)]))
    assert (result.imported, result.skipped, result.errors) == (5, 0, 0)


def test_the_sample_rewritten_by_us_imports_into_astrocyte_like_the_original(tmp_path: Path) -> None:
    with SAMPLE.open("rb") as fp:
        header, items = read_ama(fp)
        records = only_records(list(items))
    path = tmp_path / "rewritten.ama.jsonl"
    with atomic_write(path) as fp:
        write_ama(fp, header=header, records=records, include_embeddings=True)
    result = asyncio.run(brain().import_bank("copy", str(path), allowed_roots=[str(tmp_path)]))
    # The fixture's documented Astrocyte result: 11 imported, m-0007 skipped as a duplicate of m-0001.
    assert (result.imported, result.skipped, result.errors) == (11, 1, 0)


def test_we_read_what_astrocyte_writes(tmp_path: Path) -> None:
    memories = brain()
    texts = ["Alice likes jazz.", "Bob runs marathons.", "Carol speaks Portuguese and 日本語."]

    async def build() -> int:
        for i, text in enumerate(texts):
            await memories.retain(text, "src", tags=["people"], metadata={"k": "v", "n": i, "ok": True},
                                  occurred_at=datetime(2026, 3, i + 1, 12, tzinfo=UTC), source="test")
        return await memories.export_bank("src", str(tmp_path / "theirs.ama.jsonl"), allowed_roots=[str(tmp_path)])

    assert asyncio.run(build()) == 3
    with (tmp_path / "theirs.ama.jsonl").open("rb") as fp:
        header, items = read_ama(fp)
        records = only_records(list(items))
    assert (header.bank_id, header.memory_count) == ("src", 3) and isinstance(header.provider, str)
    assert len(records) == header.memory_count
    by_text = {r.text: r for r in records}
    assert sorted(by_text) == sorted(texts)
    for i, text in enumerate(texts):
        record = by_text[text]
        assert record.memory_id and record.tags == ["people"]
        assert {k: record.metadata[k] for k in ("k", "n", "ok")} == {"k": "v", "n": i, "ok": True}
        assert "_retain_id" in record.metadata  # Astrocyte's system keys come through untouched
        assert record.occurred_at == datetime(2026, 3, i + 1, 12, tzinfo=UTC)


def test_embeddings_of_large_or_whole_numbers_are_read_as_floats() -> None:
    # A sum past the float range (each value finite) and integers both take the full check.
    _, items = read(archive('{"id": "a", "text": "x", "embedding": [1e308, 1e308, -0.5]}',
                            '{"id": "b", "text": "y", "embedding": [1, 0, 2.5]}'))
    assert [i.embedding for i in items if isinstance(i, MemoryRecord)] == [[1e308, 1e308, -0.5], [1.0, 0.0, 2.5]]
    assert not [i for i in items if isinstance(i, RecordError)]
