"""AMA v1 (Astrocyte Memory Archive): UTF-8 JSONL, a header line, then one memory a line.

Reading streams line by line (memory use does not grow with the archive) and
reports every bad line with its number and reason instead of stopping. It
accepts every file Astrocyte accepts (any JSON scalar id, system keys inside
metadata, ``+00:00`` or ``Z`` times) and keeps what Astrocyte ignores
(``fact_type``, ``created_at``, ``entities``, ``embedding``). Writing puts the
five header keys first with the types Astrocyte checks.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from portability.formats.common import bounded_lines, iso, parse_time
from portability.records import ArchiveHeader, EntityRecord, MemoryRecord, RecordError

AMA_VERSION = 1
DEFAULT_MAX_LINE_BYTES = 10 * 1024 * 1024
KNOWN_KEYS = {"id", "text", "fact_type", "tags", "metadata", "occurred_at", "created_at", "retained_at", "source",
              "bank_id", "entities", "embedding", "embedding_model", "memory_layer", "links"}


class AmaHeaderError(ValueError):
    pass


class AmaCountMismatch(ValueError):
    pass


def _header(line: bytes | None) -> ArchiveHeader:
    if line is None:
        raise AmaHeaderError("AMA header line is too long")
    text = line.decode("utf-8-sig").strip()
    if not text:
        raise AmaHeaderError("AMA file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AmaHeaderError(f"AMA header is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or "_ama_version" not in data:
        raise AmaHeaderError("Not a valid AMA file (missing _ama_version)")
    if data["_ama_version"] != AMA_VERSION or isinstance(data["_ama_version"], bool):
        raise AmaHeaderError(f"Unsupported AMA version {data['_ama_version']} (expected {AMA_VERSION})")
    for key in ("bank_id", "exported_at", "provider"):
        if key in data and not isinstance(data[key], str):
            raise AmaHeaderError(f"AMA header field '{key}' must be a string")
    if "memory_count" in data and (not isinstance(data["memory_count"], int) or isinstance(data["memory_count"], bool)):
        raise AmaHeaderError("AMA header field 'memory_count' must be an integer")
    extra = {k: v for k, v in data.items() if k not in {"_ama_version", "bank_id", "exported_at", "provider",
                                                         "memory_count"}}
    return ArchiveHeader(format="ama", bank_id=data.get("bank_id"), exported_at=data.get("exported_at"),
                         provider=data.get("provider"), memory_count=data.get("memory_count"), extra=extra)


def _record(data: Any, number: int) -> MemoryRecord | RecordError:
    if not isinstance(data, dict) or "id" not in data or "text" not in data:
        return RecordError(number, "missing required fields (id, text)")
    if isinstance(data["id"], dict | list) or data["id"] is None or data["id"] == "":
        return RecordError(number, "field 'id' must be a non-empty string or number")
    if not isinstance(data["text"], str):
        return RecordError(number, "field 'text' must be a string")
    tags = data.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
        return RecordError(number, "field 'tags' must be a list of strings")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return RecordError(number, "field 'metadata' must be an object")
    metadata = dict(metadata or {})
    fact_type = data.get("fact_type")
    if fact_type is not None and not isinstance(fact_type, str):
        return RecordError(number, "field 'fact_type' must be a string")
    embedding = data.get("embedding")
    if embedding is not None and (not isinstance(embedding, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in embedding)):
        return RecordError(number, "field 'embedding' must be a list of numbers")
    entities: list[EntityRecord] = []
    for item in data.get("entities") or []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return RecordError(number, "field 'entities' must be a list of objects with a name")
        entities.append(EntityRecord(name=item["name"], entity_type=str(item.get("entity_type") or "OTHER"),
                                     aliases=[str(a) for a in item.get("aliases") or []]))
    times: dict[str, datetime | None] = {}
    for key in ("occurred_at", "created_at", "retained_at"):
        raw = data.get(key)
        times[key] = parse_time(raw) if isinstance(raw, str) else None
        if raw not in (None, "") and times[key] is None:
            # Astrocyte drops an unparseable time silently; keep the raw value so nothing is lost.
            metadata[f"_ama_unparsed_{key}"] = raw
    source = data.get("source")
    extra = {k: v for k, v in data.items() if k not in KNOWN_KEYS}
    if extra:
        metadata["_ama_extra"] = extra
    return MemoryRecord(
        text=data["text"], memory_id=str(data["id"]), fact_type=fact_type, tags=list(tags or []), metadata=metadata,
        occurred_at=times["occurred_at"], created_at=times["created_at"], retained_at=times["retained_at"],
        source=source if isinstance(source, str) else None, memory_layer=data.get("memory_layer") if isinstance(
            data.get("memory_layer"), str) else None,
        entities=entities, embedding=[float(x) for x in embedding] if embedding else None,
        embedding_model=data.get("embedding_model") if isinstance(data.get("embedding_model"), str) else None,
        position=number,
    )


def read_ama(fp: IO[bytes], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
             ) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
    """Validate the header now; return it and a lazy iterator over the memory lines."""
    lines = bounded_lines(fp, max_line_bytes)
    first = next(lines, None)
    if first is None:
        raise AmaHeaderError("AMA file is empty")
    header = _header(first[1])

    def records() -> Iterator[MemoryRecord | RecordError]:
        for number, raw in lines:
            if raw is None:
                yield RecordError(number, f"line longer than {max_line_bytes} bytes")
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield RecordError(number, f"not UTF-8: {exc.reason} at byte {exc.start}")
                continue
            if not text.strip():
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                yield RecordError(number, f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            yield _record(data, number)

    return header, records()


def record_to_line(record: MemoryRecord, *, include_embeddings: bool, include_entities: bool) -> dict[str, Any]:
    line: dict[str, Any] = {"id": record.memory_id, "text": record.text}
    if record.fact_type:
        line["fact_type"] = record.fact_type
    if record.tags:
        line["tags"] = record.tags
    if record.metadata:
        line["metadata"] = record.metadata
    for key in ("occurred_at", "created_at", "retained_at"):
        value = getattr(record, key)
        if value is not None:
            line[key] = iso(value)
    if record.source:
        line["source"] = record.source
    if record.memory_layer:
        line["memory_layer"] = record.memory_layer
    if include_entities and record.entities:
        line["entities"] = [{"name": e.name, "entity_type": e.entity_type, "aliases": e.aliases}
                            for e in record.entities]
    if include_entities and record.links:
        line["links"] = [{"target_id": link.target_id, "link_type": link.link_type, "confidence": link.confidence,
                          **({"metadata": link.metadata} if link.metadata else {})} for link in record.links]
    if include_embeddings and record.embedding:
        line["embedding"] = record.embedding
        if record.embedding_model:
            line["embedding_model"] = record.embedding_model
    return line


def write_ama(fp: IO[str], *, header: ArchiveHeader, records: Iterable[MemoryRecord],
              include_embeddings: bool = False, include_entities: bool = True) -> int:
    """Stream an archive. ``header.memory_count`` must be the number of records (the caller counts them
    in the same database snapshot it reads them from); a difference raises AmaCountMismatch."""
    if header.memory_count is None:
        raise ValueError("write_ama needs header.memory_count")
    head = {"_ama_version": AMA_VERSION, "bank_id": header.bank_id or "",
            "exported_at": header.exported_at or datetime.now(UTC).isoformat(),
            "provider": header.provider or "memoryhub", "memory_count": header.memory_count}
    fp.write(json.dumps(head, ensure_ascii=False) + "\n")
    written = 0
    for record in records:
        fp.write(json.dumps(record_to_line(record, include_embeddings=include_embeddings,
                                           include_entities=include_entities), ensure_ascii=False, default=str))
        fp.write("\n")
        written += 1
    if written != header.memory_count:
        raise AmaCountMismatch(f"wrote {written} memories but the header says {header.memory_count}")
    return written


@contextmanager
def atomic_write(dest: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``dest``, fsync, then rename over it: a reader never
    sees a half-written file under the final name, and a failure leaves nothing behind."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.fchmod(fd, 0o600)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8", newline=None if "b" in mode else "\n") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
        dir_fd = os.open(dest.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
