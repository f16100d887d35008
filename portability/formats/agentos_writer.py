"""AgentOS JSON export, in the shape AgentOS's own ``JsonExporter`` writes and its importer reads: raw
rows (snake_case columns, ``tags`` / ``emotions`` / ``metadata`` as JSON strings, epoch-ms times) for
traces, and the knowledge graph as ``knowledge_nodes`` / ``knowledge_edges`` rows: a typed node per
entity, a ``trace`` node per memory that mentions one or links to another, ``mentions`` edges and one
edge per memory link. Node types are written lower-case, as AgentOS writes them (``PERSON`` → ``person``).

AgentOS has no field for a fact type, an exact time, an event time, a source, entity aliases or the
memory's own metadata beside its AgentOS keys; those travel whole under ``metadata.memoryhub`` of each
trace, which AgentOS keeps untouched and our reader restores, so a bank comes back whole. Traces are
streamed; graph edges are spooled to a temporary file, so memory holds only the distinct entities.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from portability.formats.ama import atomic_write
from portability.formats.common import iso
from portability.paths import Location, as_location, spool_beside
from portability.records import ArchiveHeader, MemoryRecord

OURS = "memoryhub"
_NS = uuid.UUID("5b0c3f1e-8a52-4d4f-9a43-3f7f0f6f2a10")


def _ms(value: datetime | None) -> int | None:
    return int(value.astimezone(UTC).timestamp() * 1000) if value is not None else None


def _id(prefix: str, *parts: str) -> str:
    # Stable ids: the same bank exports the same file, and edges can name nodes before they are written.
    return f"{prefix}_{uuid.uuid5(_NS, chr(31).join(parts))}"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _trace(record: MemoryRecord, brain: str) -> dict[str, Any]:
    found = (record.metadata or {}).get("agentos")
    agentos: dict[str, Any] = found if isinstance(found, dict) else {}
    original: dict[str, Any] = agentos["metadata"] if isinstance(agentos.get("metadata"), dict) else {}
    ours = {"fact_type": record.fact_type, "created_at": iso(record.created_at), "occurred_at": iso(record.occurred_at),
            "retained_at": iso(record.retained_at),
            "source": record.source, "memory_layer": record.memory_layer, "metadata": record.metadata or {},
            "entities": [{"name": e.name, "entity_type": e.entity_type, "aliases": list(e.aliases)}
                         for e in record.entities],
            "links": [{"target_id": link.target_id, "link_type": link.link_type, "confidence": link.confidence,
                       "metadata": link.metadata} for link in record.links]}
    metadata = {**original, "entities": [e.name for e in record.entities], OURS: ours}
    if record.source and "source" not in original:
        metadata["source"] = record.source
    kind = agentos.get("type") or ("episodic" if record.fact_type == "experience" else "semantic")
    strength = agentos.get("strength")
    return {"brain_id": brain, "id": record.memory_id, "type": kind, "scope": agentos.get("scope") or "user",
            "content": record.text, "embedding": None,
            "strength": strength if isinstance(strength, int | float) else 1.0,
            "created_at": _ms(record.created_at) or int(time.time() * 1000),
            "last_accessed": agentos.get("last_accessed"), "retrieval_count": agentos.get("retrieval_count") or 0,
            "tags": _dumps(list(record.tags)), "emotions": _dumps(agentos.get("emotions") or {}),
            "metadata": _dumps(metadata), "deleted": 0}


class _Graph:
    def __init__(self, brain: str, spool: IO[str]) -> None:
        self.brain, self.spool = brain, spool
        self.entities: dict[str, dict[str, Any]] = {}
        self.traces: dict[str, dict[str, Any]] = {}
        self.edges = 0

    def _trace_node(self, memory_id: str, when: int) -> str:
        node = self.traces.setdefault(memory_id, {
            "brain_id": self.brain, "id": _id("kn", "trace", memory_id), "type": "trace",
            "label": f"trace:{memory_id}", "properties": _dumps({"trace_id": memory_id}), "embedding": None,
            "confidence": 1.0, "source": "{}", "created_at": when})
        return str(node["id"])

    def _edge(self, source: str, target: str, kind: str, weight: float, metadata: dict[str, Any], when: int) -> None:
        self.spool.write((",\n" if self.edges else "") + _dumps({
            "brain_id": self.brain, "id": _id("ke", source, target, kind), "source_id": source, "target_id": target,
            "type": kind, "weight": weight, "bidirectional": 0, "metadata": _dumps(metadata), "created_at": when}))
        self.edges += 1

    def add(self, record: MemoryRecord, when: int) -> None:
        memory_id = record.memory_id or ""
        for entity in record.entities:
            key = entity.name.strip().lower()
            node = self.entities.setdefault(key, {
                "brain_id": self.brain, "id": _id("kn", "entity", key), "type": entity.entity_type.lower(),
                "label": entity.name, "properties": _dumps({"aliases": list(entity.aliases)} if entity.aliases
                                                           else {}),
                "embedding": None, "confidence": 1.0, "source": _dumps({"traceId": memory_id}), "created_at": when})
            self._edge(self._trace_node(memory_id, when), str(node["id"]), "mentions", 1.0, {}, when)
        for link in record.links:
            self._edge(self._trace_node(memory_id, when), self._trace_node(link.target_id, when), link.link_type,
                       link.confidence, link.metadata, when)


def write_agentos_json(path: Path | Location, header: ArchiveHeader, records: Iterable[MemoryRecord]) -> int:
    brain = header.bank_id or "memoryhub"
    now = int(time.time() * 1000)
    count = 0
    where = as_location(path)
    with spool_beside(where) as spool, atomic_write(where) as out:
        graph = _Graph(brain, spool)
        # One row a line (AgentOS pretty-prints; this stays greppable and streamable).
        out.write('{\n"meta": ' + _dumps({"schema_version": "2", "exported_at": str(now), "exported_by": "memoryhub"})
                  + ',\n"traces": [')
        for record in records:
            trace = _trace(record, brain)
            out.write(("," if count else "") + "\n" + _dumps(trace))
            graph.add(record, int(trace["created_at"]))
            count += 1
        nodes = list(graph.entities.values()) + list(graph.traces.values())
        out.write('],\n"nodes": [' + ",\n".join(_dumps(n) for n in nodes) + '],\n"edges": [')
        spool.seek(0)
        shutil.copyfileobj(spool, out)
        out.write('],\n"documents": [], "chunks": [], "images": [], "conversations": [], "messages": []\n}\n')
    return count
