"""The entity graph: search entities, walk from entities to linked entities and their memories."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from banks.models import Bank, Entity, EntityLink, MemoryEntity
from memoryhub.replica import tolerates_lag


@dataclass
class GraphHit:
    memory_id: str
    text: str
    connected_entities: list[str] = field(default_factory=list)
    depth: int = 0
    score: float = 0.0


@tolerates_lag
def graph_search(*, bank: Bank, query: str, limit: int = 10) -> list[Entity]:
    query = query.strip()
    if not query:
        return []
    exact = Q(name__iexact=query) | Q(entity_id__iexact=query) | Q(aliases__icontains=[query])
    rows = list(Entity.objects.filter(bank=bank).filter(exact).order_by("-mention_count", "name")[:limit])
    if len(rows) < limit:
        seen = [e.pk for e in rows]
        rows += list(Entity.objects.filter(bank=bank, name__icontains=query).exclude(pk__in=seen)
                     .order_by("-mention_count", "name")[: limit - len(rows)])
    return rows


@tolerates_lag
def graph_neighbors(*, bank: Bank, entity_ids: list[str], max_depth: int = 2, limit: int = 20) -> list[GraphHit]:
    """Breadth-first over entity links and shared memories; nearer entities score higher."""
    start = list(Entity.objects.filter(bank=bank).filter(Q(entity_id__in=entity_ids) | Q(name__in=entity_ids)))
    depth_of: dict[int, int] = {e.pk: 0 for e in start}
    names = {e.pk: e.name for e in start}
    frontier = [e.pk for e in start]
    for depth in range(1, max_depth + 1):
        if not frontier:
            break
        linked = EntityLink.objects.filter(bank=bank).filter(Q(entity_a_id__in=frontier) | Q(entity_b_id__in=frontier))
        nxt: set[int] = set()
        for a, b in linked.values_list("entity_a_id", "entity_b_id"):
            nxt.update({a, b})
        # Entities mentioned in the same memory are neighbours too.
        shared = MemoryEntity.objects.filter(bank=bank, memory__in=MemoryEntity.objects.filter(
            bank=bank, entity_id__in=frontier).values("memory_id")).values_list("entity_id", flat=True)[:1000]
        nxt.update(shared)
        frontier = [pk for pk in nxt if pk not in depth_of]
        for pk in frontier:
            depth_of[pk] = depth
    if not depth_of:
        return []
    names.update(dict(Entity.objects.filter(bank=bank, pk__in=[pk for pk in depth_of if pk not in names])
                      .values_list("pk", "name")))
    hits: dict[str, GraphHit] = {}
    links = (MemoryEntity.objects.filter(bank=bank, entity_id__in=list(depth_of), memory__bank=bank,
                                         memory__archived_at__isnull=True, memory__forgotten_at__isnull=True)
             .select_related("memory").order_by("memory__retained_at")[:5000])
    for link in links:
        depth = depth_of[link.entity_id]
        hit = hits.get(link.memory.memory_id)
        if hit is None:
            hit = hits[link.memory.memory_id] = GraphHit(memory_id=link.memory.memory_id, text=link.memory.text,
                                                         depth=depth)
        hit.depth = min(hit.depth, depth)
        hit.connected_entities.append(names[link.entity_id])
        hit.score = round(hit.score + 1.0 / (1 + depth), 4)
    ordered = sorted(hits.values(), key=lambda h: (-h.score, h.depth, h.memory_id))
    return ordered[:limit]
