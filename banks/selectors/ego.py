"""An entity's ego graph: its typed links, the memories that mention it and the entities those
memories also mention. Bounded: a few small queries whatever the bank's size."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection
from django.db.models import Q

from banks.models import Bank, Entity, EntityLink, MemoryEntity


@dataclass(frozen=True)
class EgoNode:
    key: str
    kind: str  # "focus" | "entity" | "memory"
    label: str
    ref: str  # entity_id or memory_id
    entity_type: str = ""


@dataclass(frozen=True)
class EgoEdge:
    a: str
    b: str
    kind: str  # "link" (typed, directed a -> b) | "mention" | "co"
    label: str = ""


@dataclass
class EgoGraph:
    focus: EgoNode
    nodes: list[EgoNode] = field(default_factory=list)
    edges: list[EgoEdge] = field(default_factory=list)


def _entity_node(entity: Entity, kind: str = "entity") -> EgoNode:
    return EgoNode(key=f"e{entity.pk}", kind=kind, label=entity.name, ref=entity.entity_id,
                   entity_type=entity.entity_type)


def ego_graph(*, bank: Bank, focus: Entity, max_entities: int = 10, max_memories: int = 6) -> EgoGraph:
    graph = EgoGraph(focus=_entity_node(focus, "focus"))
    nodes: dict[str, EgoNode] = {}
    links = (EntityLink.objects.with_entities(bank).filter(Q(entity_a=focus) | Q(entity_b=focus))
             .order_by("-confidence", "pk")[:max_entities])
    for link in links:
        other = link.entity_b if link.entity_a_id == focus.pk else link.entity_a
        if other.pk == focus.pk:
            continue
        nodes.setdefault(f"e{other.pk}", _entity_node(other))
        graph.edges.append(EgoEdge(a=f"e{link.entity_a_id}", b=f"e{link.entity_b_id}", kind="link",
                                   label=link.link_type))
    # The joined memory names its bank too: on a partitioned install the memory table's keys lead with
    # the bank, and a join on the memory's id alone reads every partition (docs/scaling.md).
    mentions = list(MemoryEntity.objects.filter(bank_id=focus.bank_id, entity=focus, memory__bank_id=focus.bank_id,
                                                memory__archived_at__isnull=True, memory__forgotten_at__isnull=True)
                    .order_by("-memory__retained_at").values_list("memory_id", "memory__memory_id",
                                                                  "memory__text")[:max_memories])
    for pk, memory_id, text in mentions:
        key = f"m{pk}"
        nodes[key] = EgoNode(key=key, kind="memory", label=text, ref=memory_id)
        graph.edges.append(EgoEdge(a=graph.focus.key, b=key, kind="mention"))
    memory_pks = [pk for pk, _, _ in mentions]
    room = max(0, max_entities - sum(1 for n in nodes.values() if n.kind == "entity"))
    if memory_pks and room:
        # Entities the same memories mention, most shared first.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT me.entity_id, array_agg(me.memory_id) FROM banks_memoryentity me "
                "WHERE me.bank_id = %s AND me.memory_id = ANY(%s) AND me.entity_id <> %s GROUP BY me.entity_id "
                "ORDER BY count(*) DESC, me.entity_id LIMIT %s", [focus.bank_id, memory_pks, focus.pk, room])
            shared = cursor.fetchall()
        others = Entity.objects.filter(bank_id=focus.bank_id).in_bulk([entity_pk for entity_pk, _ in shared])
        for entity_pk, memory_list in shared:
            entity = others.get(entity_pk)
            if entity is None:
                continue
            nodes.setdefault(f"e{entity_pk}", _entity_node(entity))
            graph.edges.extend(EgoEdge(a=f"m{m}", b=f"e{entity_pk}", kind="co") for m in memory_list)
    graph.nodes = list(nodes.values())
    return graph


@dataclass(frozen=True)
class Mention:
    pk: int
    memory_id: str
    text: str
    retained_at: datetime
    state: str  # "live" | "archived" | "forgotten"


def entity_mentions(*, bank: Bank, entity: Entity, after: int | None = None,
                    limit: int = 50) -> tuple[list[Mention], int | None]:
    """The memories that mention ``entity``, newest stored first, a page at a time: keyset on the memory's
    id, so the last of 100,000 mentions is as cheap to reach as the first. Every mention row is listed,
    archived and forgotten memories too (marked), as ``Entity.mention_count`` counts them all."""
    rows = MemoryEntity.objects.filter(bank=bank, entity=entity, memory__bank=bank)
    if after is not None:
        rows = rows.filter(memory_id__lt=after)
    found = list(rows.order_by("-memory_id").values_list(
        "memory_id", "memory__memory_id", "memory__text", "memory__retained_at", "memory__archived_at",
        "memory__forgotten_at")[: limit + 1])
    page = [Mention(pk=pk, memory_id=memory_id, text=text, retained_at=retained,
                    state="forgotten" if forgotten else "archived" if archived else "live")
            for pk, memory_id, text, retained, archived, forgotten in found[:limit]]
    return page, (page[-1].pk if len(found) > limit else None)
