"""The whole-bank map: the most mentioned entities of a bank and the edges between them.

Bounded whatever the bank's size: the top ``limit`` entities by mention count (an index walk), the
co-mention edges among those entities only (two memories' worth of mention rows each, grouped in
the database), the typed links among them, and the bank's entity count. Four statements."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection

from banks.models import Bank, Entity, EntityLink
from memoryhub.replica import tolerates_lag

MAP_SIZES = (25, 50, 100, 200, 400)
MAP_DEFAULT = 50
MAP_MAX = MAP_SIZES[-1]
# Edges drawn at most: the strongest first. A map of 400 entities with every weak co-mention is a
# hairball nobody reads, and its SVG would weigh megabytes.
EDGE_CAP = 1200


@dataclass(frozen=True)
class MapNode:
    pk: int
    entity_id: str
    name: str
    entity_type: str
    mentions: int


@dataclass(frozen=True)
class MapEdge:
    a: int  # entity pk
    b: int
    weight: int  # memories mentioning both (co-mention), or 0 for a typed link alone
    link_type: str = ""  # a typed link between the two, if any


@dataclass
class BankMap:
    nodes: list[MapNode] = field(default_factory=list)
    edges: list[MapEdge] = field(default_factory=list)
    entity_total: int = 0
    edges_cut: bool = False  # more co-mention edges exist than were drawn


def map_size(raw: str | None) -> int:
    """The number of entities asked for, clamped to what the map may draw."""
    try:
        value = int(raw or MAP_DEFAULT)
    except ValueError:
        return MAP_DEFAULT
    return max(MAP_SIZES[0], min(MAP_MAX, value))


@tolerates_lag
def bank_map(*, bank: Bank, limit: int = MAP_DEFAULT) -> BankMap:
    limit = max(1, min(MAP_MAX, limit))
    rows = list(Entity.objects.filter(bank=bank, mention_count__gt=0).order_by("-mention_count", "name", "pk")
                .values_list("pk", "entity_id", "name", "entity_type", "mention_count")[:limit])
    result = BankMap(nodes=[MapNode(*row) for row in rows])
    result.entity_total = Entity.objects.filter(bank=bank).count()
    if len(rows) < 2:
        return result
    pks = [row[0] for row in rows]
    with connection.cursor() as cursor:
        # Both sides are restricted to the shown entities through the entity index, and the pair is
        # joined on the memory: the work grows with the shown entities' mentions, not the bank.
        cursor.execute(
            "SELECT a.entity_id, b.entity_id, count(*) AS n FROM banks_memoryentity a "
            "JOIN banks_memoryentity b ON b.memory_id = a.memory_id AND b.entity_id > a.entity_id "
            "AND b.entity_id = ANY(%s) AND b.bank_id = %s "
            "WHERE a.entity_id = ANY(%s) AND a.bank_id = %s "
            "GROUP BY a.entity_id, b.entity_id ORDER BY n DESC, a.entity_id, b.entity_id LIMIT %s",
            [pks, bank.pk, pks, bank.pk, EDGE_CAP + 1])
        co = cursor.fetchall()
    result.edges_cut = len(co) > EDGE_CAP
    weights = {(a, b): n for a, b, n in co[:EDGE_CAP]}
    typed: dict[tuple[int, int], str] = {}
    for a, b, link_type in (EntityLink.objects.filter(bank=bank, entity_a_id__in=pks, entity_b_id__in=pks)
                            .order_by("-confidence", "pk").values_list("entity_a_id", "entity_b_id", "link_type")):
        if a != b:
            typed.setdefault((min(a, b), max(a, b)), link_type)
    result.edges = [MapEdge(a=a, b=b, weight=weights.get((a, b), 0), link_type=typed.get((a, b), ""))
                    for a, b in sorted(set(weights) | set(typed))]
    return result
