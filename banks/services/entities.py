"""Entity mentions: which of the bank's entities a memory names.

Set-based, whatever the number of entities: one insert for the entities, one statement that reads
them and links the memory, and one counter update. ``mention_count`` is only ever moved by the owner
of memory rows (banks.services.memory_rows.mentions_count): SQL arithmetic, rows locked in id order,
so concurrent writers neither lose each other's increments nor deadlock. A retain counts last, under
its bank's lock (``count=False`` here, then ``mentions_count``): the counter rows of a bank's common
entities are wanted by every retain, and a writer holding them while it waits for the bank's lock made
all the others wait behind it. An import attaches a whole batch at once (``attach_entities_batch``).
"""

from __future__ import annotations

import json
from typing import Any

from django.db import connection

from banks.models import Memory
from banks.services.memory_rows import mentions_link_memory, mentions_link_named, mentions_link_pairs
from memoryhub.postgres.prepared import execute_prepared


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


def link_memory_entities(memory: Memory, entity_pks: list[int]) -> list[int]:
    """Link a memory to entities it does not mention yet; bumps their counts. Returns the newly linked."""
    return list(mentions_link_pairs(memory.bank_id, [(memory.pk, pk) for pk in entity_pks]))


def _entities_insert(bank_pk: int, wanted: dict[str, dict[str, Any]]) -> None:
    """Insert the bank's entities ``wanted`` that are missing, in entity-id order: a new entity another
    writer is inserting makes this insert wait for it, and two writers naming the same entities in
    different orders would deadlock."""
    ids = sorted(wanted)
    with connection.cursor() as cursor:
        execute_prepared(
            cursor,
            "INSERT INTO banks_entity (bank_id, entity_id, name, entity_type, aliases, metadata, mention_count, "
            "created_at) SELECT %s, e.entity_id, e.name, e.entity_type, "
            "ARRAY(SELECT jsonb_array_elements_text(e.aliases::jsonb))::varchar[], NULL, 0, now() "
            "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) WITH ORDINALITY "
            "AS e(entity_id, name, entity_type, aliases, n) ORDER BY e.n ON CONFLICT DO NOTHING",
            [bank_pk, ids, [wanted[i]["name"] for i in ids], [wanted[i]["entity_type"] for i in ids],
             [json.dumps(wanted[i]["aliases"]) for i in ids]])


def attach_entities(memory: Memory, entities: list[dict[str, Any]], *, count: bool = True) -> tuple[list[int], list[int]]:
    """Create or reuse the bank's entities by id (or lower-cased name) and link them to the memory.

    Returns (the pks of the entities it names, those newly linked). With ``count`` False the newly
    linked are not counted yet: the caller passes them to ``mentions_count`` before it commits."""
    wanted = _wanted(entities)
    if not wanted:
        return [], []
    _entities_insert(memory.bank_id, wanted)
    return mentions_link_memory(memory.bank_id, memory.pk, sorted(wanted), count=count)


def attach_entities_batch(bank_pk: int, items: list[tuple[int, list[dict[str, Any]]]], *,
                          count: bool = True) -> dict[int, int]:
    """Attach the entities of many memories of one bank (an import batch) set-based: one insert of every
    entity the batch names, in id order, one insert of every mention, one counter update in id order.
    Two imports naming the same entities in different orders lock them in the same order, so they wait
    for each other instead of deadlocking. Returns each entity's new mentions (counted unless ``count`` is
    False: the caller passes them to ``mentions_count`` with its other changes before it commits)."""
    wanted: dict[str, dict[str, Any]] = {}
    pairs: list[tuple[int, str]] = []
    for memory_pk, entities in items:
        named = _wanted(entities)
        for entity_id, fields in named.items():
            wanted.setdefault(entity_id, fields)
            pairs.append((memory_pk, entity_id))
    if not pairs:
        return {}
    _entities_insert(bank_pk, wanted)
    return mentions_link_named(bank_pk, pairs, count=count)


__all__ = ["attach_entities", "attach_entities_batch", "link_memory_entities"]
