"""amplihack hierarchical JSON (format 1.1): semantic and episodic nodes become memories; the four
edge kinds become memory links, so a round trip restores them. The caller chooses the bank."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memoryhub.input_rules import parse_time
from portability.formats.ama import atomic_write
from portability.formats.common import number, str_list
from portability.formats.compression import read_document
from portability.paths import Location, as_location
from portability.records import ArchiveHeader, EntityRecord, LinkRecord, MemoryRecord, RecordError

MAX_BYTES = 500 * 1024 * 1024
# Key under a node's metadata where our writer keeps what amplihack has no field for.
WRAPPED = "memoryhub"
EDGE_KINDS = ("similar_to", "derives_from", "supersedes", "transitioned_to")


def read_amplihack(path: Path | Location, *, max_bytes: int = MAX_BYTES, **_: Any
                   ) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
    # The size is checked while reading (what a gzip file decompresses to included), before anything is parsed.
    path = as_location(path)
    data = json.loads(read_document(path, max_bytes).decode("utf-8-sig"))
    if not isinstance(data, dict) or str(data.get("format_version", "")) != "1.1":
        raise ValueError("not an amplihack hierarchical export (format_version 1.1)")
    agent = str(data.get("agent_name") or "")
    links: dict[str, list[LinkRecord]] = {}
    for kind in EDGE_KINDS:
        for edge in data.get(f"{kind}_edges") or []:
            if isinstance(edge, dict) and edge.get("source_id") and edge.get("target_id"):
                meta = {k: v for k, v in edge.items() if k not in {"source_id", "target_id"}}
                confidence = edge.get("weight", edge.get("confidence", 1.0))
                links.setdefault(str(edge["source_id"]), []).append(LinkRecord(
                    target_id=str(edge["target_id"]), link_type=kind,
                    confidence=float(confidence) if isinstance(confidence, int | float) else 1.0, metadata=meta))
    header = ArchiveHeader(format="amplihack", exported_at=str(data.get("exported_at") or ""), provider="amplihack",
                           memory_count=len(data.get("semantic_nodes") or []) + len(data.get("episodic_nodes") or []),
                           extra={"agent_name": agent, "statistics": data.get("statistics")})

    def node(item: Any, kind: str, position: str) -> MemoryRecord | RecordError:
        if not isinstance(item, dict) or not isinstance(item.get("content"), str) or not item.get("memory_id"):
            return RecordError(position, "node needs memory_id and content")
        raw_meta: dict[str, Any] = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
        # What our writer wrapped (fact type, the memory's own metadata, times, source, layer) comes back out.
        ours: dict[str, Any] = raw_meta[WRAPPED] if isinstance(raw_meta.get(WRAPPED), dict) else {}
        meta = {k: v for k, v in raw_meta.items() if k not in (WRAPPED, "memoryhub_fact_type")}
        category = meta.get("category") or kind
        fact = raw_meta.get("memoryhub_fact_type") or ours.get("fact_type") or (
            "experience" if kind == "episodic" or category == "episodic" else "world")
        keep = {k: v for k, v in item.items() if k not in {"memory_id", "content", "tags", "created_at",
                                                            "entity_name", "metadata"}}
        if "links" in ours:
            # Our own writer's node: the memory as it was, not amplihack's view of it.
            return _ours(item, ours, fact, links.get(str(item["memory_id"]), []), position)
        # An amplihack node, or one from our earlier writer (which wrapped fewer fields).
        own: dict[str, Any] = ours["metadata"] if isinstance(ours.get("metadata"), dict) else {}
        return MemoryRecord(
            text=item["content"], memory_id=str(item["memory_id"]), fact_type=str(fact),
            tags=[str(t) for t in item.get("tags") or []],
            metadata={**own, "amplihack": {"node_kind": kind, "category": category, "metadata": meta or None,
                                           **keep}},
            created_at=parse_time(item.get("created_at")),
            occurred_at=parse_time(ours.get("occurred_at")) or parse_time(meta.get("source_date")),
            memory_layer=ours.get("memory_layer") if isinstance(ours.get("memory_layer"), str) else None,
            source=ours.get("source") if isinstance(ours.get("source"), str) else
            f"amplihack:{item.get('source_label') or agent}",
            entities=[EntityRecord(name=item["entity_name"], entity_type="unknown")] if item.get("entity_name")
            else [],
            links=links.get(str(item["memory_id"]), []), position=position,
        )

    def records() -> Iterator[MemoryRecord | RecordError]:
        for kind in ("semantic", "episodic"):
            for i, item in enumerate(data.get(f"{kind}_nodes") or []):
                yield node(item, kind, f"{kind}_nodes[{i}]")

    return header, records()


def _ours(item: dict[str, Any], ours: dict[str, Any], fact: Any, edges: list[LinkRecord],
          position: str) -> MemoryRecord:
    def text(key: str) -> str | None:
        return ours[key] if isinstance(ours.get(key), str) else None

    entities = ours.get("entities")
    kept_links = ours.get("links")
    return MemoryRecord(
        text=item["content"], memory_id=str(item["memory_id"]), fact_type=str(fact),
        tags=[str(t) for t in item.get("tags") or []],
        metadata=dict(ours["metadata"]) if isinstance(ours.get("metadata"), dict) else {},
        created_at=parse_time(ours.get("created_at")) or parse_time(item.get("created_at")),
        occurred_at=parse_time(ours.get("occurred_at")), retained_at=parse_time(ours.get("retained_at")),
        memory_layer=text("memory_layer"), source=text("source"),
        entities=[EntityRecord(name=str(e["name"]), entity_type=str(e.get("entity_type") or "OTHER"),
                               aliases=str_list(e.get("aliases")))
                  for e in entities if isinstance(e, dict) and e.get("name")] if isinstance(entities, list) else (
            [EntityRecord(name=item["entity_name"], entity_type="unknown")] if item.get("entity_name") else []),
        links=[LinkRecord(target_id=str(link["target_id"]), link_type=str(link.get("link_type") or "related"),
                          confidence=number(link.get("confidence")),
                          metadata=dict(link["metadata"]) if isinstance(link.get("metadata"), dict) else {})
               for link in kept_links if isinstance(link, dict) and link.get("target_id")]
        if isinstance(kept_links, list) else edges,
        position=position,
    )


# amplihack requires every field of an edge; these are the defaults when a link has no value for one.
EDGE_FIELDS: dict[str, dict[str, Any]] = {
    "similar_to": {"weight": 1.0, "metadata": {}},
    "derives_from": {"extraction_method": "memoryhub", "confidence": 1.0},
    "supersedes": {"reason": "", "temporal_delta": ""},
    "transitioned_to": {"from_value": "", "to_value": "", "turn": 0, "transition_type": ""},
}


def _edge(record: MemoryRecord, link: LinkRecord) -> dict[str, Any]:
    fields = dict(EDGE_FIELDS[link.link_type])
    for name in ("weight", "confidence"):
        if name in fields:
            fields[name] = link.confidence
    for name, default in fields.items():
        value = link.metadata.get(name)
        if value is not None and type(value) is type(default):
            fields[name] = value
    return {"source_id": record.memory_id, "target_id": link.target_id, **fields}


def write_amplihack(path: Path | Location, header: ArchiveHeader, records: Iterable[MemoryRecord]) -> int:
    semantic, episodic = [], []
    edges: dict[str, list[dict[str, Any]]] = {k: [] for k in EDGE_KINDS}
    for record in records:
        source = (record.metadata or {}).get("amplihack") or {}
        # Everything amplihack has no field for travels whole, so our reader restores the memory exactly.
        wrapped = {"fact_type": record.fact_type, "source": record.source, "memory_layer": record.memory_layer,
                   "occurred_at": record.occurred_at.isoformat() if record.occurred_at else None,
                   "created_at": record.created_at.isoformat() if record.created_at else None,
                   "retained_at": record.retained_at.isoformat() if record.retained_at else None,
                   "metadata": record.metadata or {},
                   "entities": [{"name": e.name, "entity_type": e.entity_type, "aliases": list(e.aliases)}
                                for e in record.entities],
                   "links": [{"target_id": link.target_id, "link_type": link.link_type,
                              "confidence": link.confidence, "metadata": link.metadata} for link in record.links]}
        created = (record.created_at.replace(tzinfo=None).isoformat() if record.created_at else "")
        if source.get("node_kind") == "episodic":
            episodic.append({"memory_id": record.memory_id, "content": record.text,
                             "source_label": source.get("source_label", ""), "tags": record.tags,
                             "metadata": {**(source.get("metadata") or {}), "memoryhub_fact_type": record.fact_type,
                                          WRAPPED: wrapped}, "created_at": created})
        else:
            semantic.append({"memory_id": record.memory_id, "concept": source.get("concept") or
                             (record.tags[0] if record.tags else ""), "content": record.text,
                             "confidence": source.get("confidence", 0.8), "source_id": source.get("source_id", ""),
                             "tags": record.tags, "metadata": {**(source.get("metadata") or {}),
                                                               "category": source.get("category", "semantic"),
                                                               "memoryhub_fact_type": record.fact_type,
                                                               WRAPPED: wrapped},
                             "created_at": created,
                             "entity_name": record.entities[0].name if record.entities else ""})
        for link in record.links:
            if link.link_type in edges:
                edges[link.link_type].append(_edge(record, link))
    data = {"agent_name": str(header.extra.get("agent_name") or header.bank_id or "memoryhub"),
            "exported_at": str(int(time.time())), "format_version": "1.1", "semantic_nodes": semantic,
            "episodic_nodes": episodic, **{f"{k}_edges": v for k, v in edges.items()},
            "statistics": {"semantic_node_count": len(semantic), "episodic_node_count": len(episodic),
                           **{f"{k}_edge_count": len(v) for k, v in edges.items()}}}
    with atomic_write(path) as fp:
        json.dump(data, fp, ensure_ascii=False, indent=2)
    return len(semantic) + len(episodic)
