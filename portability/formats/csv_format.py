"""CSV: a header row with a required ``content`` column. Tags as a JSON array, a pipe list or a comma
list; ``created_at`` as ISO or epoch; other columns are kept in metadata, not dropped. Our writer adds
``occurred_at``, ``memory_layer`` and JSON ``entities`` / ``links`` columns, so a bank comes back whole,
and writes a cell a spreadsheet would run as a formula with a leading apostrophe, which our reader
removes again from files our writer wrote (``memoryhub.csv_cells``)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from memoryhub.csv_cells import neutralise_row, restore
from memoryhub.input_rules import parse_time
from portability.formats.common import iso, str_list
from portability.formats.compression import open_archive_bytes
from portability.paths import Location, as_location
from portability.records import ArchiveHeader, EntityRecord, LinkRecord, MemoryRecord, RecordError

KNOWN = {"id", "content", "type", "scope", "tags", "created_at", "createdat", "metadata", "source", "fact_type",
         "occurred_at", "retained_at", "memory_layer", "entities", "links"}
COLUMNS = ["id", "content", "fact_type", "tags", "created_at", "occurred_at", "retained_at", "source", "memory_layer",
           "metadata", "entities", "links"]
TYPE_TO_FACT = {"episodic": "experience"}


def _tags(raw: str) -> list[str]:
    raw = (raw or "").strip()
    if not raw:
        return []
    if raw.startswith("["):
        try:
            value = json.loads(raw)
            if isinstance(value, list):
                return [str(t).strip() for t in value if str(t).strip()]
        except ValueError:
            pass
    parts = raw.split("|") if "|" in raw else raw.split(",")
    return [p.strip() for p in parts if p.strip()]


def _json_list(raw: str, column: str) -> list[dict[str, Any]]:
    raw = (raw or "").strip()
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{column} is not valid JSON: {exc.msg}") from None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValueError(f"{column} must be a JSON list of objects")
    return value


def _graph(cells: dict[str, str]) -> tuple[list[EntityRecord], list[LinkRecord]]:
    entities = [EntityRecord(name=str(e["name"]), entity_type=str(e.get("entity_type") or "OTHER"),
                             aliases=str_list(e.get("aliases")))
                for e in _json_list(cells.get("entities", ""), "entities") if str(e.get("name") or "").strip()]
    links = []
    for link in _json_list(cells.get("links", ""), "links"):
        if not isinstance(link.get("target_id"), str) or not isinstance(link.get("link_type"), str):
            raise ValueError("links need a string target_id and link_type")
        confidence = link.get("confidence", 1.0)
        links.append(LinkRecord(target_id=link["target_id"], link_type=link["link_type"],
                                confidence=float(confidence) if isinstance(confidence, int | float) else 1.0,
                                metadata=dict(link["metadata"]) if isinstance(link.get("metadata"), dict) else {}))
    return entities, links


# Bytes that were not UTF-8, as the reader's "surrogateescape" keeps them: the row is refused, by number.
_UNDECODED = re.compile("[\udc80-\udcff]")


def _open(path: Location, cap: int) -> IO[str]:
    """The file as text, gzip or not; bytes that are not UTF-8 are kept as lone surrogates so the row
    holding them is named instead of the whole read failing at a byte offset."""
    return io.TextIOWrapper(open_archive_bytes(path, cap), encoding="utf-8-sig", errors="surrogateescape",
                            newline="")


def _allow_cells(max_bytes: int) -> None:
    """Let a cell be as long as a line may be (the module's own limit, 131,072 characters, refused what our
    writer writes). Process-wide and only ever raised: bounded by the configured line cap, never unbounded."""
    if csv.field_size_limit() < max_bytes:
        csv.field_size_limit(max_bytes)


def read_csv(path: Path | Location, *, max_line_bytes: int = 10 * 1024 * 1024, max_decompressed: int = 8 * 1024**3,
             **_: Any) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
    path = as_location(path)
    _allow_cells(max_line_bytes)
    with _open(path, max_decompressed) as fp:
        try:
            header_row = next(csv.reader(fp), None)
        except csv.Error as exc:
            raise ValueError(f"CSV header row cannot be read: {exc}") from None
    columns = [c.strip().lower() for c in header_row or []]
    if "content" not in columns:
        raise ValueError('CSV has no "content" column (the header row must name one)')

    # A file our writer wrote (it has the entities and links columns) keeps each text exactly; others are
    # trimmed, as AgentOS trims them.
    exact = {"entities", "links"} <= set(columns)

    def records() -> Iterator[MemoryRecord | RecordError]:
        with _open(path, max_decompressed) as fp:
            reader = csv.reader(fp)
            next(reader, None)
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:
                    yield RecordError(reader.line_num, f"not a CSV row: {exc}")
                    continue
                line = reader.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if any(_UNDECODED.search(cell) for cell in row):
                    yield RecordError(line, "not UTF-8 (bytes that are not UTF-8 text)")
                    continue
                # Our own writer neutralised spreadsheet formulas (memoryhub.csv_cells); its cells come back exact.
                cells = {columns[i]: restore(value) if exact else value for i, value in enumerate(row)
                         if i < len(columns)}
                def cell(name: str, cells: dict[str, str] = cells) -> str | None:
                    # Our writer's cells come back exactly; a hand-made file's are trimmed.
                    value = cells.get(name) or ""
                    return (value if exact and value.strip() else value.strip()) or None

                content = cells.get("content") or ""
                content = content if exact and content.strip() else content.strip()
                if not content:
                    yield RecordError(line, "empty content")
                    continue
                metadata: dict[str, Any] = {}
                if (cells.get("metadata") or "").strip():
                    try:
                        metadata = json.loads(cells["metadata"])
                    except json.JSONDecodeError as exc:
                        yield RecordError(line, f"metadata is not valid JSON: {exc.msg}")
                        continue
                    if not isinstance(metadata, dict):
                        yield RecordError(line, "metadata must be a JSON object")
                        continue
                extra = {k: v for k, v in cells.items() if k not in KNOWN and v.strip()}
                if extra:
                    metadata["csv"] = extra
                kind = (cells.get("type") or "").strip()
                if kind:
                    metadata.setdefault("agentos", {})["type"] = kind
                if (cells.get("scope") or "").strip():
                    metadata.setdefault("agentos", {})["scope"] = cells["scope"].strip()
                raw_time = cells.get("created_at") or cells.get("createdat") or ""
                created = parse_time(raw_time.strip()) if raw_time.strip() else None
                if raw_time.strip() and created is None:
                    metadata["_import_unparsed_created_at"] = raw_time
                times: dict[str, Any] = {}
                for name in ("occurred_at", "retained_at"):
                    raw = (cells.get(name) or "").strip()
                    times[name] = parse_time(raw) if raw else None
                    if raw and times[name] is None:
                        metadata[f"_import_unparsed_{name}"] = raw
                try:
                    entities, links = _graph(cells)
                except ValueError as exc:
                    yield RecordError(line, str(exc))
                    continue
                yield MemoryRecord(
                    text=content, memory_id=cell("id"),
                    fact_type=(cells.get("fact_type") or "").strip() or TYPE_TO_FACT.get(kind, "world" if kind else None),
                    tags=_tags(cells.get("tags", "")), metadata=metadata, created_at=created,
                    occurred_at=times["occurred_at"], retained_at=times["retained_at"],
                    source=cell("source"), memory_layer=cell("memory_layer"), entities=entities, links=links,
                    position=line,
                )

    return ArchiveHeader(format="csv"), records()


def write_csv(path: Path | Location, header: ArchiveHeader, records: Iterable[MemoryRecord]) -> int:
    from portability.formats.ama import atomic_write

    count = 0
    with atomic_write(path) as fp:
        writer = csv.writer(fp)
        writer.writerow(COLUMNS)
        for record in records:
            entities = [{"name": e.name, "entity_type": e.entity_type, "aliases": list(e.aliases)}
                        for e in record.entities]
            links = [{"target_id": link.target_id, "link_type": link.link_type, "confidence": link.confidence,
                      **({"metadata": link.metadata} if link.metadata else {})} for link in record.links]
            writer.writerow(neutralise_row([record.memory_id, record.text, record.fact_type or "",
                             json.dumps(record.tags, ensure_ascii=False), iso(record.created_at) or "",
                             iso(record.occurred_at) or "", iso(record.retained_at) or "", record.source or "", record.memory_layer or "",
                             _dumps(record.metadata) if record.metadata else "", _dumps(entities) if entities else "",
                             _dumps(links) if links else ""]))
            count += 1
    return count


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
