"""AgentOS: the real JSON export (raw rows: snake_case, JSON-encoded string columns, epoch ms,
base64 Float32 embeddings), the documented camelCase trace shape, NDJSON of either, and the
AgentOS SQLite brain. A deleted trace is imported and forgotten (its history kept, never recalled);
conversations become exchanges; the knowledge graph's nodes and edges become entities, mentions,
entity links and memory links (``agentos_graph``)."""

from __future__ import annotations

import base64
import json
import sqlite3
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memoryhub.input_rules import parse_time
from portability.formats.agentos_graph import Graph, read_graph
from portability.formats.common import bounded_lines, number, str_list
from portability.formats.compression import open_archive_bytes, read_document
from portability.paths import Location, as_location
from portability.records import ArchiveHeader, EntityRecord, LinkRecord, MemoryRecord, RecordError

FACT_TYPES = {"episodic": "experience"}  # semantic, procedural, prospective, relational → world
OURS = "memoryhub"  # what our writer keeps under a trace's metadata (see agentos_writer)


def _json_field(value: Any, default: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else default
        except ValueError:
            return default
    return default if value is None else value


def _embedding(value: Any) -> list[float] | None:
    if isinstance(value, list):
        return [float(x) for x in value]
    if isinstance(value, str) and value:
        raw = base64.b64decode(value)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw[: len(raw) // 4 * 4]))
    return None


def trace_record(row: dict[str, Any], position: Any) -> MemoryRecord | RecordError:
    content = row.get("content")
    if not isinstance(content, str) or not content.strip():
        return RecordError(position, "trace has no content")
    kind = str(row.get("type") or "episodic")
    tags = _json_field(row.get("tags"), [])
    metadata = _json_field(row.get("metadata"), {})
    if not isinstance(tags, list) or not isinstance(metadata, dict):
        return RecordError(position, "tags must be a list and metadata an object")
    entities = [EntityRecord(name=str(n), entity_type="unknown") for n in metadata.get("entities") or []
                if isinstance(n, str)]
    source = metadata.get("source")
    extra = {k: v for k, v in row.items() if k not in {"id", "content", "tags", "metadata", "embedding", "type",
                                                         "scope", "created_at", "createdAt", "brain_id"}}
    try:
        embedding = _embedding(row.get("embedding"))
    except (ValueError, struct.error):
        return RecordError(position, "embedding is not base64 Float32 data")
    created = parse_time(row.get("created_at", row.get("createdAt")))
    if isinstance(metadata.get(OURS), dict):
        return _ours(row, content, tags, metadata[OURS], embedding, position)
    return MemoryRecord(
        text=content.strip(), memory_id=str(row["id"]) if row.get("id") else None,
        fact_type=FACT_TYPES.get(kind, "world"), tags=[str(t).strip() for t in tags if str(t).strip()],
        metadata={"agentos": {"type": kind, "scope": row.get("scope") or "user",
                              "metadata": {k: v for k, v in metadata.items() if k != "import_hash"}, **extra}},
        created_at=created, occurred_at=created if kind == "episodic" else None,
        source=f"agentos:{source}" if isinstance(source, str) and source else None, memory_layer=kind,
        entities=entities, embedding=embedding, embedding_model="agentos" if embedding else None,
        forgotten=row.get("deleted") in (1, True, "1"), position=position,
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _ours(row: dict[str, Any], content: str, tags: list[Any], ours: dict[str, Any], embedding: list[float] | None,
          position: Any) -> MemoryRecord:
    """A trace our own writer wrote: the memory exactly as it was exported."""
    def text(key: str) -> str | None:
        return ours[key] if isinstance(ours.get(key), str) else None

    return MemoryRecord(
        text=content, memory_id=str(row["id"]) if row.get("id") else None,
        fact_type=text("fact_type") or FACT_TYPES.get(str(row.get("type")), "world"),
        tags=[str(t) for t in tags], metadata=dict(ours["metadata"]) if isinstance(ours.get("metadata"), dict) else {},
        created_at=parse_time(ours.get("created_at")) or parse_time(row.get("created_at")),
        occurred_at=parse_time(ours.get("occurred_at")), retained_at=parse_time(ours.get("retained_at")),
        source=text("source"), memory_layer=text("memory_layer"),
        entities=[EntityRecord(name=str(e["name"]), entity_type=str(e.get("entity_type") or "OTHER"),
                               aliases=str_list(e.get("aliases")))
                  for e in _list(ours.get("entities")) if isinstance(e, dict) and e.get("name")],
        links=[LinkRecord(target_id=str(link["target_id"]), link_type=str(link.get("link_type") or "related"),
                          confidence=number(link.get("confidence")),
                          metadata=dict(link["metadata"]) if isinstance(link.get("metadata"), dict) else {})
               for link in _list(ours.get("links")) if isinstance(link, dict) and link.get("target_id")],
        embedding=embedding, embedding_model="agentos" if embedding else None,
        forgotten=row.get("deleted") in (1, True, "1"), position=position,
    )


def _exchanges(conversations: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Iterator[MemoryRecord]:
    by_conversation: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        by_conversation.setdefault(str(message.get("conversation_id")), []).append(message)
    for conversation in conversations:
        thread = sorted(by_conversation.get(str(conversation.get("id")), []), key=lambda m: m.get("created_at") or 0)
        for i, message in enumerate(thread):
            if message.get("role") != "user":
                continue
            answers = []
            for follow in thread[i + 1:]:
                if follow.get("role") == "user":
                    break
                if follow.get("role") == "assistant":
                    answers.append(str(follow.get("content") or ""))
            text = f"[user]: {message.get('content', '')}" + (f"\n[assistant]: {chr(10).join(answers)}" if answers
                                                               else "")
            when = parse_time(message.get("created_at"))
            yield MemoryRecord(text=text, memory_id=str(message.get("id")), fact_type="experience",
                               tags=["conversation"], occurred_at=when, created_at=when,
                               source=f"agentos:conversation:{conversation.get('id')}",
                               metadata={"agentos": {"conversation_id": conversation.get("id"),
                                                     "title": conversation.get("title")}},
                               position=f"messages/{message.get('id')}")


def read_agentos_json(path: Path | Location, *, max_bytes: int = 500 * 1024 * 1024, **_: Any
                      ) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
    path = as_location(path)
    data = json.loads(read_document(path, max_bytes).decode("utf-8-sig"))
    if not isinstance(data, dict) or not isinstance(data.get("traces"), list):
        raise ValueError('not an AgentOS export: missing top-level "traces" array')
    meta = data.get("meta") or {}
    header = ArchiveHeader(format="agentos_json", bank_id=None, exported_at=str(meta.get("exported_at") or ""),
                           provider="agentos", memory_count=len(data["traces"]),
                           extra={"meta": meta, "nodes": len(data.get("nodes") or []),
                                  "edges": len(data.get("edges") or [])})

    graph = read_graph(data.get("nodes") or [], data.get("edges") or [],
                       [str(row.get("id")) for row in data["traces"] if isinstance(row, dict) and row.get("id")])
    header.extra["graph"] = graph.counts()

    def records() -> Iterator[MemoryRecord | RecordError]:
        for i, row in enumerate(data["traces"]):
            item = trace_record(row, f"traces[{i}]") if isinstance(row, dict) else RecordError(
                f"traces[{i}]", "trace is not an object")
            # Our own traces already carry their entities and links exactly; the graph is for AgentOS.
            ours = isinstance(item, MemoryRecord) and OURS in _json_field(row.get("metadata"), {})
            yield graph.attach(item) if isinstance(item, MemoryRecord) and not ours else item
        yield from graph.problems
        yield from _exchanges(data.get("conversations") or [], data.get("messages") or [])

    return header, records()


def read_agentos_ndjson(path: Path | Location, *, max_line_bytes: int = 10 * 1024 * 1024,
                        max_decompressed: int = 8 * 1024**3, **_: Any) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
    path = as_location(path)

    def records() -> Iterator[MemoryRecord | RecordError]:
        with open_archive_bytes(path, max_decompressed) as fp:
            for number, raw in bounded_lines(fp, max_line_bytes):
                if raw is None:
                    yield RecordError(number, f"line longer than {max_line_bytes} bytes")
                    continue
                try:
                    text = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
                except UnicodeDecodeError as exc:
                    # Replacing the bytes would store text the source never held: the line is refused.
                    yield RecordError(number, f"not UTF-8: {exc.reason} at byte {exc.start} of the line")
                    continue
                if not text:
                    continue
                try:
                    row = json.loads(text)
                except ValueError as exc:
                    yield RecordError(number, f"invalid JSON: {exc}")
                    continue
                yield trace_record(row, number) if isinstance(row, dict) else RecordError(number, "not an object")

    return ArchiveHeader(format="agentos_ndjson", provider="agentos"), records()


def _sqlite_graph(connection: sqlite3.Connection) -> Graph:
    """The brain's knowledge graph, when the file has one (older brains may lack the tables)."""
    try:
        ids = [str(row[0]) for row in connection.execute("SELECT id FROM memory_traces")]
        nodes = [dict(row) for row in connection.execute("SELECT * FROM knowledge_nodes")]
        edges = [dict(row) for row in connection.execute("SELECT * FROM knowledge_edges")]
    except sqlite3.DatabaseError:
        return Graph()
    for node in nodes:
        node.pop("embedding", None)
    return read_graph(nodes, edges, ids)


def read_agentos_sqlite(path: Path | Location, **_: Any
                        ) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
    path = as_location(path)

    def records() -> Iterator[MemoryRecord | RecordError]:
        # Opened by descriptor like every archive, and handed to SQLite as that descriptor, read-only and
        # immutable: nothing is created or changed, and no journal is looked for beside it by name.
        held = path.open("rb")
        try:
            connection = sqlite3.connect(f"file:/proc/self/fd/{held.fileno()}?mode=ro&immutable=1", uri=True)
        except BaseException:
            held.close()
            raise
        connection.row_factory = sqlite3.Row
        try:
            graph = _sqlite_graph(connection)
            for i, row in enumerate(connection.execute("SELECT * FROM memory_traces")):
                data = dict(row)
                if isinstance(data.get("embedding"), bytes):
                    data["embedding"] = base64.b64encode(data["embedding"]).decode()
                item = trace_record(data, f"memory_traces[{i}]")
                yield graph.attach(item) if isinstance(item, MemoryRecord) else item
            yield from graph.problems
        except sqlite3.DatabaseError as exc:
            yield RecordError("memory_traces", f"not an AgentOS brain: {exc}")
        finally:
            connection.close()
            held.close()

    return ArchiveHeader(format="sqlite", provider="agentos"), records()
