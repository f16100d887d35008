"""Entity mentions: which of the bank's entities a memory names.

Set-based, whatever the number of entities: one insert for the entities, one read, one insert
for the links and one counter update. ``mention_count`` is only ever moved by SQL arithmetic,
with rows locked in id order, so concurrent writers neither lose each other's increments nor
deadlock.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from banks.models import Entity, Memory


def _wanted(entities: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Entity id -> fields for a new row; the first mention of an id decides its name and type."""
    wanted: dict[str, dict[str, Any]] = {}
    for item in entities:
        name = str(item.get("name", "")).strip()[:500]
        if not name:
            continue
        entity_id = str(item.get("id") or item.get("entity_id") or name.lower())[:255]
        wanted.setdefault(entity_id, {
            "name": name,
            "entity_type": str(item.get("entity_type") or item.get("type") or "OTHER")[:64],
            "aliases": [str(a)[:500] for a in (item.get("aliases") or [])],
        })
    return wanted


def link_memory_entities(memory_pk: int, entity_pks: list[int]) -> list[int]:
    """Link a memory to entities it does not mention yet; bumps their counts. Returns the newly linked."""
    if not entity_pks:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO banks_memoryentity (bank_id, memory_id, entity_id) "
            "SELECT m.bank_id, m.id, unnest(%s::bigint[]) FROM banks_memory m WHERE m.id = %s "
            "ON CONFLICT ON CONSTRAINT memory_entity_unique DO NOTHING RETURNING entity_id",
            [entity_pks, memory_pk],
        )
        linked = [row[0] for row in cursor.fetchall()]
    if linked:
        # Rows locked in id order: retains link entities concurrently, and two that lock the same
        # entities in different orders would deadlock.
        with connection.cursor() as cursor:
            cursor.execute("UPDATE banks_entity SET mention_count = mention_count + 1 WHERE id IN "
                           "(SELECT id FROM banks_entity WHERE id = ANY(%s) ORDER BY id FOR UPDATE)", [sorted(linked)])
    return linked


def attach_entities(memory: Memory, entities: list[dict[str, Any]]) -> list[Entity]:
    """Create or reuse the bank's entities by id (or lower-cased name) and link them to the memory."""
    wanted = _wanted(entities)
    if not wanted:
        return []
    # Inserted in id order, for the same reason as the counts below (a new entity another writer is
    # inserting makes this insert wait for it).
    Entity.objects.bulk_create(
        [Entity(bank_id=memory.bank_id, entity_id=entity_id, **wanted[entity_id]) for entity_id in sorted(wanted)],
        ignore_conflicts=True,
    )
    by_id = {e.entity_id: e for e in Entity.objects.filter(bank_id=memory.bank_id, entity_id__in=list(wanted))}
    link_memory_entities(memory.pk, [e.pk for e in by_id.values()])
    return [by_id[entity_id] for entity_id in wanted if entity_id in by_id]


__all__ = ["attach_entities", "link_memory_entities"]
