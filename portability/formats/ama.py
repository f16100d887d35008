"""AMA v1 (Astrocyte Memory Archive): UTF-8 JSONL, a header line, then one memory a line.

Reading validates the header with Astrocyte's messages, then streams the memory
lines one at a time (memory use does not grow with the archive, and a line over
the size cap is skipped in bounded chunks, never held whole). Every bad line
becomes a ``RecordError`` with its line number (the header is line 1) and the
reason, and reading goes on. It accepts every line Astrocyte 0.22 imports (any
scalar ``id``, system keys inside ``metadata``, ``Z`` or offset times) and keeps
what Astrocyte drops: ``fact_type``, ``created_at``, ``entities``, ``embedding``,
unparseable times (``metadata["_ama_unparsed_<key>"]``) and unknown keys
(``metadata["_ama_extra"]``).

Writing streams too, so the header's ``memory_count`` must be known before the
first memory is written: the caller counts (one ``COUNT`` in the same database
snapshot it then reads from) and ``write_ama`` checks the number it actually
wrote, raising ``AmaCountMismatch`` otherwise. Written inside ``atomic_write``,
a mismatch leaves no file behind. A placeholder count patched afterwards was
rejected: Astrocyte needs a JSON integer, and rewriting the first line in place
would need fixed-width padding and a second pass over a possibly huge file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from portability.paths import Location, as_location
from portability.paths import atomic_write as safe_atomic_write
from portability.records import (
    ArchiveHeader,
    EntityRecord,
    LinkRecord,
    MemoryRecord,
    RecordError,
    storable_vector,
)
from portability.vector_text import PLACEHOLDER, VectorText, cut_vector

AMA_VERSION = 1
DEFAULT_MAX_LINE_BYTES = 10 * 1024 * 1024
MAX_ID_CHARS = 255
HEADER_KEYS = ("_ama_version", "bank_id", "exported_at", "provider", "memory_count")
# ``bank_id`` on a memory line (written by Astrocyte's CLI) repeats the header and is not kept.
KNOWN_KEYS = frozenset({"id", "text", "fact_type", "tags", "metadata", "occurred_at", "created_at", "retained_at",
                        "source", "memory_layer", "bank_id", "entities", "embedding", "embedding_model", "links"})
TIME_KEYS = ("occurred_at", "created_at", "retained_at")


class AmaHeaderError(ValueError):
    """The first line is not a usable AMA v1 header; nothing of the archive should be imported."""


class AmaCountMismatch(ValueError):
    """``write_ama`` was told one ``memory_count`` and given a different number of records."""


class _TooLong:
    pass


_TOO_LONG = _TooLong()


def _lines(fp: IO[Any], max_bytes: int) -> Iterator[tuple[int, str | bytes | _TooLong]]:
    """(line number, line) one at a time, from a binary or a text file. A line over ``max_bytes``
    comes out as ``_TOO_LONG`` after the rest of it was read and dropped chunk by chunk."""
    number = 0
    while True:
        line = fp.readline(max_bytes + 1)
        if not line:
            return
        number += 1
        newline = b"\n" if isinstance(line, bytes) else "\n"
        if not line.endswith(newline) and len(line) > max_bytes:
            while True:
                rest = fp.readline(max_bytes + 1)
                if not rest or rest.endswith(newline):
                    break
            yield number, _TOO_LONG
        elif isinstance(line, str) and len(line.rstrip("\n").encode("utf-8", "replace")) > max_bytes:
            # A text file's readline counts characters; the cap is in bytes.
            yield number, _TOO_LONG
        else:
            yield number, line


def _decode(line: str | bytes, *, header: bool = False) -> str:
    if isinstance(line, str):
        return line.lstrip("\ufeff") if header else line
    return line.decode("utf-8-sig" if header else "utf-8")


def _parse_header(line: str | bytes | _TooLong | None, max_bytes: int) -> ArchiveHeader:
    if isinstance(line, _TooLong):
        raise AmaHeaderError(f"AMA header line is longer than {max_bytes} bytes")
    try:
        text = _decode(line, header=True).strip() if line is not None else ""
    except UnicodeDecodeError as exc:
        raise AmaHeaderError(f"AMA header is not UTF-8: {exc.reason} at byte {exc.start}") from None
    if not text:
        raise AmaHeaderError("AMA file is empty")
    try:
        data = _loads_memory_line(text)
    except json.JSONDecodeError as exc:
        raise AmaHeaderError(f"AMA header is not valid JSON: {exc}") from None
    except RecursionError:
        raise AmaHeaderError("AMA header is not valid JSON: nested too deeply") from None
    if not isinstance(data, dict) or "_ama_version" not in data:
        raise AmaHeaderError("Not a valid AMA file (missing _ama_version)")
    version = data["_ama_version"]
    if isinstance(version, bool) or version != AMA_VERSION:
        raise AmaHeaderError(f"Unsupported AMA version {json.dumps(version)} (expected {AMA_VERSION})")
    # Astrocyte also refuses a header that lacks these keys; minimal hand-written headers
    # (just ``_ama_version``) are accepted here, wrong types are not.
    for key in ("bank_id", "exported_at", "provider"):
        if key in data and not isinstance(data[key], str):
            raise AmaHeaderError(f"AMA header field '{key}' must be a string")
    count = data.get("memory_count")
    if "memory_count" in data and (not isinstance(count, int) or isinstance(count, bool)):
        raise AmaHeaderError("AMA header field 'memory_count' must be an integer")
    return ArchiveHeader(format="ama", bank_id=data.get("bank_id"), exported_at=data.get("exported_at"),
                         provider=data.get("provider"), memory_count=count,
                         extra={k: v for k, v in data.items() if k not in HEADER_KEYS})


def parse_iso(value: str) -> datetime | None:
    """ISO 8601 as Astrocyte reads it (``datetime.fromisoformat``: ``Z``, offsets, microseconds,
    date-only at midnight); naive means UTC; anything else is None."""
    text = value.strip()
    if text.endswith("z"):
        text = text[:-1] + "Z"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class _Bad(Exception):
    pass


def _optional_str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise _Bad(f"field '{key}' must be a string")
    return value


def _str_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Bad(f"field '{field}' must be a list of strings")
    return list(value)


def _memory_id(value: Any) -> str | None:
    if value is None or value == "":
        return None  # Astrocyte ignores ids altogether; the importer mints one, as Astrocyte does.
    if isinstance(value, dict | list):
        raise _Bad("field 'id' must be a string or a number")
    memory_id = value if isinstance(value, str) else json.dumps(value)
    if len(memory_id) > MAX_ID_CHARS:
        raise _Bad(f"field 'id' is longer than {MAX_ID_CHARS} characters")
    return memory_id


def _entities(value: Any) -> list[EntityRecord]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad("field 'entities' must be a list")
    entities = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
            raise _Bad("field 'entities' must hold objects with a non-empty 'name'")
        kind = item.get("entity_type")
        if kind is not None and not isinstance(kind, str):
            raise _Bad("field 'entities[].entity_type' must be a string")
        entities.append(EntityRecord(name=item["name"], entity_type=kind or "OTHER",
                                     aliases=_str_list(item.get("aliases"), "entities[].aliases")))
    return entities


def _links(value: Any) -> list[LinkRecord]:
    if value is None:
        return []
    problem = _Bad("field 'links' must hold objects with string 'target_id' and 'link_type'")
    if not isinstance(value, list):
        raise problem
    links = []
    for item in value:
        if (not isinstance(item, dict) or not isinstance(item.get("target_id"), str)
                or not isinstance(item.get("link_type"), str) or not _is_number(item.get("confidence", 1.0))
                or not isinstance(item.get("metadata") or {}, dict)):
            raise problem
        links.append(LinkRecord(target_id=item["target_id"], link_type=item["link_type"],
                                confidence=float(item.get("confidence", 1.0)),
                                metadata=dict(item.get("metadata") or {})))
    return links


def _embedding(value: Any) -> list[float] | VectorText | None:
    if value is None or isinstance(value, VectorText):  # the latter checked by its grammar
        return value
    # The common case, checked in C: JSON gave floats that PostgreSQL can store (the rule every format
    # meets in record_problem); anything else takes the full check below.
    if isinstance(value, list) and value and all(type(x) is float for x in value) and storable_vector(value):
        return value
    if not isinstance(value, list) or not all(_is_number(x) for x in value):
        raise _Bad("field 'embedding' must be a list of numbers")
    return [float(x) for x in value] or None


def _memory(data: dict[str, Any], number: int) -> MemoryRecord:
    if not isinstance(data["text"], str):
        raise _Bad("field 'text' must be a string")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise _Bad("field 'metadata' must be an object")
    metadata = dict(metadata or {})
    times: dict[str, datetime | None] = {}
    for key in TIME_KEYS:
        raw = data.get(key)
        times[key] = parse_iso(raw) if isinstance(raw, str) else None
        if times[key] is None and raw not in (None, ""):
            # Astrocyte drops an unparseable time silently; keep the raw value instead.
            metadata[f"_ama_unparsed_{key}"] = raw
    extra = {k: v for k, v in data.items() if k not in KNOWN_KEYS}
    if extra:
        previous = metadata.get("_ama_extra")
        metadata["_ama_extra"] = {**previous, **extra} if isinstance(previous, dict) else extra
    return MemoryRecord(
        text=data["text"], memory_id=_memory_id(data["id"]), fact_type=_optional_str(data, "fact_type"),
        tags=_str_list(data.get("tags"), "tags"), metadata=metadata, occurred_at=times["occurred_at"],
        created_at=times["created_at"], retained_at=times["retained_at"], source=_optional_str(data, "source"),
        memory_layer=_optional_str(data, "memory_layer"), entities=_entities(data.get("entities")),
        embedding=_embedding(data.get("embedding")), embedding_model=_optional_str(data, "embedding_model"),
        links=_links(data.get("links")), position=number,
    )


def _loads_memory_line(text: str) -> Any:
    """The line's JSON, its ``"embedding"`` kept as text when it is a plain array of numbers
    (portability.vector_text); any doubt and the whole line is parsed as it is."""
    cut = cut_vector(text)
    if cut is not None:
        try:
            data = json.loads(cut[0])
        except (json.JSONDecodeError, RecursionError):
            data = None
        if isinstance(data, dict) and data.get("embedding") == PLACEHOLDER:
            data["embedding"] = cut[1]
            return data
    return json.loads(text)


def parse_line(line: str | bytes | _TooLong, number: int, max_bytes: int) -> MemoryRecord | RecordError | None:
    """One memory line as a record, an error, or None for a blank line."""
    if isinstance(line, _TooLong):
        return RecordError(number, f"line longer than {max_bytes} bytes")
    try:
        text = _decode(line)
    except UnicodeDecodeError as exc:
        return RecordError(number, f"not UTF-8: {exc.reason} at byte {exc.start}")
    if not text.strip():
        return None
    try:
        data = _loads_memory_line(text)
    except json.JSONDecodeError as exc:
        return RecordError(number, f"invalid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        # A line of 100 000 "[" must not take the whole import down.
        return RecordError(number, "invalid JSON: nested too deeply")
    if not isinstance(data, dict) or "id" not in data or "text" not in data:
        return RecordError(number, "missing required fields (id, text)")
    try:
        return _memory(data, number)
    except _Bad as exc:
        return RecordError(number, str(exc))


def read_ama(fp: IO[bytes] | IO[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
             ) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
    """Read and check the header now (``AmaHeaderError``); return it with a lazy iterator over the
    memory lines, which reads ``fp`` only as far as it has been advanced."""
    lines = _lines(fp, max_line_bytes)
    first = next(lines, None)
    header = _parse_header(first[1] if first else None, max_line_bytes)

    def records() -> Iterator[MemoryRecord | RecordError]:
        for number, line in lines:
            item = parse_line(line, number, max_line_bytes)
            if item is not None:
                yield item

    return header, records()


def _iso(value: datetime) -> str:
    # Naive datetimes are UTC by this project's convention, never the server's local time.
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat()


def record_to_line(record: MemoryRecord, *, include_embeddings: bool, include_entities: bool) -> dict[str, Any]:
    """The JSON object of one memory line, keys in the order of the AMA spec, empty values left out."""
    if not record.memory_id:
        raise ValueError("an AMA memory line needs an id; the record has none")
    line: dict[str, Any] = {"id": record.memory_id, "text": record.text}
    if record.fact_type:
        line["fact_type"] = record.fact_type
    if record.tags:
        line["tags"] = list(record.tags)
    if record.metadata:
        line["metadata"] = record.metadata
    for key in TIME_KEYS:
        value = getattr(record, key)
        if value is not None:
            line[key] = _iso(value)
    if record.source:
        line["source"] = record.source
    if record.memory_layer:
        line["memory_layer"] = record.memory_layer
    if include_entities and record.entities:
        line["entities"] = [{"name": e.name, "entity_type": e.entity_type, "aliases": list(e.aliases)}
                            for e in record.entities]
    if include_entities and record.links:
        line["links"] = [{"target_id": link.target_id, "link_type": link.link_type, "confidence": link.confidence,
                          **({"metadata": link.metadata} if link.metadata else {})} for link in record.links]
    if include_embeddings and record.embedding:
        line["embedding"] = [float(x) for x in record.embedding]
        if record.embedding_model:
            line["embedding_model"] = record.embedding_model
    return line


def dumps_line(obj: dict[str, Any]) -> str:
    # Raw UTF-8 (Astrocyte opens archives as UTF-8); strict JSON: NaN/Infinity are refused, not written.
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, default=str) + "\n"


def header_line(header: ArchiveHeader) -> dict[str, Any]:
    count = header.memory_count
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError("write_ama needs header.memory_count, the number of records it will be given")
    return {"_ama_version": AMA_VERSION, "bank_id": header.bank_id or "",
            "exported_at": header.exported_at or datetime.now(UTC).isoformat(),
            "provider": header.provider or "memoryhub", "memory_count": count}


def write_ama(fp: IO[str], *, header: ArchiveHeader, records: Iterable[MemoryRecord],
              include_embeddings: bool = False, include_entities: bool = True) -> int:
    """Stream an archive into ``fp`` and return the number of memory lines written.

    ``header.memory_count`` must be the number of ``records`` (see the module docstring); any
    difference raises ``AmaCountMismatch``, as soon as one record too many arrives.
    """
    head = header_line(header)
    expected = head["memory_count"]
    fp.write(dumps_line(head))
    written = 0
    for record in records:
        if written == expected:
            raise AmaCountMismatch(f"more memories than the header's memory_count {expected}")
        fp.write(dumps_line(record_to_line(record, include_embeddings=include_embeddings,
                                           include_entities=include_entities)))
        written += 1
    if written != expected:
        raise AmaCountMismatch(f"wrote {written} memories but the header says {expected}")
    return written


def atomic_write(dest: Path | Location, mode: str = "w") -> AbstractContextManager[IO[Any]]:
    """Write ``dest`` through a temporary file in the same directory: flush, fsync, rename over
    ``dest``, fsync the directory, all by descriptor (``portability.paths.fs.atomic_write``). The final
    name only ever holds a complete file; on any exception the temporary file is removed and ``dest``
    is left as it was. Mode 0600; a ``.gz`` name is written compressed."""
    return safe_atomic_write(as_location(dest), mode)
