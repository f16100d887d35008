"""Entity mentions of memory rows and their counters: ``Entity.mention_count`` always equals the number
of the entity's mention rows, because only these functions insert or delete mentions, and each moves
the counts in the same transaction, set-based, entity rows locked in id order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from django.db import connection

from memoryhub.postgres.prepared import execute_prepared


def mentions_count(bank_pk: int, deltas: dict[int, int]) -> None:
    """Move each entity's ``mention_count`` by its delta, in one statement, rows locked in id order (two
    writers locking the same entities in different orders would deadlock). NO KEY UPDATE, the lock the
    update itself takes: a plain FOR UPDATE also waits for writers that merely inserted a mention of the
    entity (their key share lock), and those may be waiting for us."""
    deltas = {pk: d for pk, d in deltas.items() if d}
    if not deltas:
        return
    pks = sorted(deltas)
    with connection.cursor() as cursor:
        execute_prepared(
            cursor,
            "UPDATE banks_entity e SET mention_count = GREATEST(e.mention_count + d.delta, 0) "
            "FROM unnest(%s::bigint[], %s::int[]) AS d(id, delta) WHERE e.bank_id = %s AND e.id = d.id AND e.id IN "
            "(SELECT id FROM banks_entity WHERE bank_id = %s AND id = ANY(%s) ORDER BY id FOR NO KEY UPDATE)",
            [pks, [deltas[pk] for pk in pks], bank_pk, bank_pk, pks])


def mentions_drop(bank_pk: int, memory_pks: Sequence[int]) -> int:
    """Delete the mentions of ``memory_pks`` (rows of bank ``bank_pk``) and take them off their entities' counts (one statement);
    returns how many mentions went."""
    if not memory_pks:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH gone AS (DELETE FROM banks_memoryentity WHERE bank_id = %s AND memory_id = ANY(%s) "
            "RETURNING entity_id), "
            "counted AS (SELECT entity_id AS id, count(*) AS n FROM gone GROUP BY entity_id), "
            "locked AS (SELECT e.id FROM banks_entity e WHERE e.bank_id = %s AND e.id IN (SELECT id FROM counted) "
            "ORDER BY e.id FOR NO KEY UPDATE) "
            "UPDATE banks_entity e SET mention_count = GREATEST(e.mention_count - c.n, 0) FROM counted c "
            "WHERE e.bank_id = %s AND e.id = c.id AND e.id IN (SELECT id FROM locked) RETURNING c.n",
            [bank_pk, list(memory_pks), bank_pk, bank_pk])
        return sum(int(n) for (n,) in cursor.fetchall())


def mentions_take(bank_pk: int, memory_pks: Sequence[int]) -> dict[int, int]:
    """Delete the mentions of ``memory_pks`` (rows of bank ``bank_pk``) without counting yet: returns each entity's (negative) change,
    which the caller passes to ``mentions_count`` with the rest of its changes (one ordered lock pass
    for a whole import batch) before it commits."""
    if not memory_pks:
        return {}
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM banks_memoryentity WHERE bank_id = %s AND memory_id = ANY(%s) RETURNING entity_id",
                       [bank_pk, list(memory_pks)])
        return {pk: -n for pk, n in Counter(int(row[0]) for row in cursor.fetchall()).items()}


def mentions_unlink_pairs(bank_pk: int, pairs: Sequence[tuple[int, int]]) -> dict[int, int]:
    """Delete the mentions ``(memory pk, entity pk)`` of bank ``bank_pk`` and take them off their entities' counts (one
    statement each); returns how many mentions each entity lost."""
    if not pairs:
        return {}
    ordered = sorted(set(pairs), key=lambda p: (p[1], p[0]))
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM banks_memoryentity me USING unnest(%s::bigint[], %s::bigint[]) AS p(memory_id, entity_id) "
            "WHERE me.bank_id = %s AND me.memory_id = p.memory_id AND me.entity_id = p.entity_id "
            "RETURNING me.entity_id",
            [[m for m, _ in ordered], [e for _, e in ordered], bank_pk])
        gone = {pk: -n for pk, n in Counter(int(row[0]) for row in cursor.fetchall()).items()}
    mentions_count(bank_pk, gone)
    return {pk: -n for pk, n in gone.items()}


def mentions_link_pairs(bank_pk: int, pairs: Sequence[tuple[int, int]], *, count: bool = True) -> dict[int, int]:
    """Link each ``(memory pk, entity pk)`` not linked yet, in one statement, in entity then memory order;
    returns how many new mentions each entity got (already counted unless ``count`` is False: the caller
    passes them to ``mentions_count`` before it commits)."""
    if not pairs:
        return {}
    ordered = sorted(set(pairs), key=lambda p: (p[1], p[0]))
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO banks_memoryentity (bank_id, memory_id, entity_id) "
            "SELECT %s, * FROM unnest(%s::bigint[], %s::bigint[]) "
            "ON CONFLICT ON CONSTRAINT memory_entity_unique DO NOTHING RETURNING entity_id",
            [bank_pk, [m for m, _ in ordered], [e for _, e in ordered]])
        added = dict(Counter(int(row[0]) for row in cursor.fetchall()))
    if count:
        mentions_count(bank_pk, added)
    return added


def mentions_link_named(bank_pk: int, pairs: Sequence[tuple[int, str]], *, count: bool = True) -> dict[int, int]:
    """Link memories to the bank's entities by entity id (``(memory pk, entity_id)``), reading the entities
    in a statement of its own: it sees those other writers committed while the caller's insert of new
    entities waited. Returns new mentions per entity pk (counted unless ``count`` is False)."""
    if not pairs:
        return {}
    ids = sorted({e for _, e in pairs})
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH e AS (SELECT id, entity_id FROM banks_entity WHERE bank_id = %s AND entity_id = ANY(%s)), "
            "linked AS (INSERT INTO banks_memoryentity (bank_id, memory_id, entity_id) "
            "SELECT %s, p.memory_id, e.id FROM unnest(%s::bigint[], %s::text[]) AS p(memory_id, entity_id) "
            "JOIN e ON e.entity_id = p.entity_id ORDER BY e.id, p.memory_id "
            "ON CONFLICT ON CONSTRAINT memory_entity_unique DO NOTHING RETURNING entity_id) "
            "SELECT entity_id, count(*) FROM linked GROUP BY entity_id",
            [bank_pk, ids, bank_pk, [m for m, _ in pairs], [e for _, e in pairs]])
        added = {int(pk): int(n) for pk, n in cursor.fetchall()}
    if count:
        mentions_count(bank_pk, added)
    return added


def mentions_link_memory(bank_pk: int, memory_pk: int, entity_ids: Sequence[str], *,
                         count: bool = True) -> tuple[list[int], list[int]]:
    """Link one memory to the bank's entities ``entity_ids`` (a retain): returns (the pks of those entities,
    those newly linked), the new ones counted unless ``count`` is False. A statement of its own after the
    entities' insert: it must see entities other writers committed while that insert waited."""
    with connection.cursor() as cursor:
        execute_prepared(
            cursor,
            "WITH e AS (SELECT id FROM banks_entity WHERE bank_id = %s AND entity_id = ANY(%s)), "
            "linked AS (INSERT INTO banks_memoryentity (bank_id, memory_id, entity_id) "
            "SELECT %s, %s, e.id FROM e ON CONFLICT ON CONSTRAINT memory_entity_unique DO NOTHING "
            "RETURNING entity_id) "
            "SELECT e.id, e.id IN (SELECT entity_id FROM linked) FROM e ORDER BY e.id",
            [bank_pk, list(entity_ids), bank_pk, memory_pk])
        rows = cursor.fetchall()
    found = [pk for pk, _ in rows]
    linked = [pk for pk, new in rows if new]
    if count:
        mentions_count(bank_pk, dict.fromkeys(linked, 1))
    return found, linked


_RECOUNT = ("FROM (SELECT e2.id, count(me.id) AS n FROM banks_entity e2 LEFT JOIN banks_memoryentity me "
            "ON me.bank_id = e2.bank_id AND me.entity_id = e2.id WHERE e2.bank_id = %s GROUP BY e2.id) c")


def mentions_recount(bank_pk: int, *, dry_run: bool = False) -> int:
    """Set every entity's count of a bank from its mention rows (a whole bank restored from an archive,
    whose counts are the archive's word; counts that drifted before this package owned them); returns
    how many entities were off. Needs a transaction: the bank's entity rows are locked first, in id
    order, so a writer's mention either committed before the count (and is counted) or moves the count
    after it."""
    with connection.cursor() as cursor:
        if dry_run:
            # Vetted: _RECOUNT is a module constant; the bank is a parameter.
            cursor.execute(f"SELECT count(*) FROM banks_entity e JOIN (SELECT c.id, c.n {_RECOUNT}) k "  # noqa: S608
                           "ON k.id = e.id WHERE e.bank_id = %s AND e.mention_count <> k.n", [bank_pk, bank_pk])
            return int(cursor.fetchone()[0])
        cursor.execute("SELECT id FROM banks_entity WHERE bank_id = %s ORDER BY id FOR NO KEY UPDATE", [bank_pk])
        cursor.execute(f"UPDATE banks_entity e SET mention_count = c.n {_RECOUNT} "  # noqa: S608
                       "WHERE e.bank_id = %s AND e.id = c.id AND e.mention_count <> c.n", [bank_pk, bank_pk])
        return int(cursor.rowcount)


__all__ = ["mentions_take", "mentions_count", "mentions_recount", "mentions_link_memory", "mentions_drop", "mentions_link_named", "mentions_link_pairs"]
