"""An AgentOS brain's knowledge graph (``knowledge_nodes`` / ``knowledge_edges`` rows) as what a bank holds.

* A ``trace`` node (``properties.trace_id``, or a ``trace:<id>`` label) stands for a memory.
* Any other node is an entity: its label is the name, its type the entity type in the bank's vocabulary
  (``person`` → ``PERSON``, ``place`` → ``LOCATION``...; the node's own type stays in the metadata).
* A trace node linked to an entity node, either way, or an entity node whose ``source.traceId``
  names a trace: that memory mentions the entity.
* An edge between two entity nodes is an entity link; between two trace nodes, a memory link
  (both ways when the edge is ``bidirectional``).
* An entity link travels with every memory that mentions one of its ends (it is created once,
  whichever lands first); a group of entities no memory mentions travels with the first trace.
* An edge with an unknown end is reported, not dropped silently.

Node properties and edge metadata are kept (on the mentioning memory's ``metadata.agentos.nodes``
and on the links). Pure: rows in, records out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from portability.records import EntityLinkRecord, EntityRecord, LinkRecord, MemoryRecord, RecordError


def _obj(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


# AgentOS node types are free text; the common ones map onto the types entity extraction gives a bank.
NODE_TYPES = {"person": "PERSON", "people": "PERSON", "user": "PERSON", "organization": "ORG", "organisation": "ORG",
              "org": "ORG", "company": "ORG", "team": "ORG", "place": "LOCATION", "location": "LOCATION",
              "city": "LOCATION", "country": "LOCATION", "product": "PRODUCT", "tool": "PRODUCT", "event": "EVENT"}


def entity_type(node_type: Any) -> str:
    kind = str(node_type or "").strip()
    return NODE_TYPES.get(kind.lower(), kind.upper() or "OTHER")[:64]


def _weight(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 1.0


@dataclass
class Graph:
    mentions: dict[str, dict[str, EntityRecord]] = field(default_factory=dict)
    node_notes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    memory_links: dict[str, list[LinkRecord]] = field(default_factory=dict)
    entity_links: dict[str, list[EntityLinkRecord]] = field(default_factory=dict)
    problems: list[RecordError] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return dict(self.totals)

    def attach(self, record: MemoryRecord) -> MemoryRecord:
        trace = record.memory_id or ""
        known = {e.name.strip().lower() for e in record.entities}
        for key, entity in self.mentions.get(trace, {}).items():
            if key in known:
                # The graph's node is typed; a bare name from the trace's metadata is not.
                record.entities = [entity if e.name.strip().lower() == key else e for e in record.entities]
            else:
                record.entities.append(entity)
        record.links += self.memory_links.get(trace, [])
        record.entity_links += self.entity_links.get(trace, [])
        if self.node_notes.get(trace):
            record.metadata.setdefault("agentos", {})["nodes"] = self.node_notes[trace]
        return record


def read_graph(nodes: list[Any], edges: list[Any], trace_ids: list[str]) -> Graph:
    graph = Graph()
    traces = set(trace_ids)
    trace_of: dict[str, str] = {}  # node id -> trace id
    entity_of: dict[str, EntityRecord] = {}
    described: dict[str, dict[str, Any]] = {}
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or not node.get("id"):
            graph.problems.append(RecordError(f"nodes[{i}]", "node needs an id"))
            continue
        props, source = _obj(node.get("properties")), _obj(node.get("source"))
        label = str(node.get("label") or "")
        trace = props.get("trace_id") or (label[6:] if label.startswith("trace:") else None)
        if node.get("type") == "trace" or (trace and trace in traces):
            trace_of[str(node["id"])] = str(trace or "")
            continue
        if not label.strip():
            graph.problems.append(RecordError(f"nodes[{i}]", f"node {node['id']} has no label"))
            continue
        entity_of[str(node["id"])] = EntityRecord(name=label.strip(), entity_type=entity_type(node.get("type")))
        described[str(node["id"])] = {"id": node["id"], "type": node.get("type"), "label": label,
                                      "properties": props, "confidence": node.get("confidence"),
                                      "created_at": node.get("created_at")}
        if source.get("traceId") in traces:
            _mention(graph, str(source["traceId"]), entity_of[str(node["id"])], described[str(node["id"])])
    pending: list[EntityLinkRecord] = []
    ends_of: list[tuple[str, str]] = []
    for i, edge in enumerate(edges):
        if not isinstance(edge, dict):
            graph.problems.append(RecordError(f"edges[{i}]", "edge is not an object"))
            continue
        a, b = str(edge.get("source_id")), str(edge.get("target_id"))
        kind = str(edge.get("type") or "related_to")
        meta = {"agentos_edge": edge.get("id"), "bidirectional": bool(edge.get("bidirectional")),
                **({"metadata": _obj(edge.get("metadata"))} if _obj(edge.get("metadata")) else {})}
        weight = _weight(edge.get("weight"))
        if a in trace_of and b in trace_of and trace_of[a] in traces and trace_of[b] in traces:
            graph.memory_links.setdefault(trace_of[a], []).append(LinkRecord(trace_of[b], kind, weight, meta))
            if edge.get("bidirectional"):
                graph.memory_links.setdefault(trace_of[b], []).append(LinkRecord(trace_of[a], kind, weight, meta))
        elif a in trace_of and b in entity_of and trace_of[a] in traces:
            _mention(graph, trace_of[a], entity_of[b], described[b])
        elif b in trace_of and a in entity_of and trace_of[b] in traces:
            _mention(graph, trace_of[b], entity_of[a], described[a])
        elif a in entity_of and b in entity_of:
            pending.append(EntityLinkRecord(entity_of[a], entity_of[b], kind, weight, meta))
            ends_of.append((a, b))
        else:
            graph.problems.append(RecordError(f"edges[{i}]", f"edge {edge.get('id')} joins {a} and {b}, "
                                                             "which are not both nodes or traces of this file"))
    mentioned_by: dict[str, set[str]] = {}
    for trace, entities in graph.mentions.items():
        for key in entities:
            mentioned_by.setdefault(key, set()).add(trace)
    for link, (a, b) in zip(pending, ends_of, strict=True):
        carriers = mentioned_by.get(entity_of[a].name.lower(), set()) | mentioned_by.get(
            entity_of[b].name.lower(), set())
        for trace in sorted(carriers) or trace_ids[:1]:
            graph.entity_links.setdefault(trace, []).append(link)
    graph.totals = {"nodes": len(nodes), "edges": len(edges), "entities": len(entity_of),
                    "entity_links": len(pending), "memory_links": sum(len(v) for v in graph.memory_links.values()),
                    "problems": len(graph.problems)}
    return graph


def _mention(graph: Graph, trace: str, entity: EntityRecord, described: dict[str, Any]) -> None:
    key = entity.name.strip().lower()
    if key not in graph.mentions.setdefault(trace, {}):
        graph.mentions[trace][key] = entity
        graph.node_notes.setdefault(trace, []).append(described)
