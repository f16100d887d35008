"""Moving memory rows into another bank: the row takes the target's bank-scoped columns, and what
hangs off it follows.

* the row: the target's vector-index tier (a bank with its own index leaves the shared one out of
  its rows), the target's model (a vector of another model is replaced by one the caller computed
  with the target's embedder, before any transaction opened), its search configuration (a trigger);
* its mentions: re-pointed at the target's entities of the same id (created when missing), each
  source entity's count down and each target entity's count up, in one statement; the graph edges
  (``EntityLink``) between two entities the moved rows mention are copied between their target
  counterparts (the source bank keeps its own);
* its links: a link between two moved rows moves along; one with an end left behind would join two
  banks and is dropped; a ``merged_into`` pointer across the banks is cleared;
* its near-duplicate pairs were measured in the old bank: dropped.

A tombstone stays where it was; so does a row whose id, or live text, the target already holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from django.db import connection
from django.utils import timezone

from banks.models import Bank
from banks.services.memory_rows.contexts import turn_context_followers, turn_context_refresh
from banks.services.memory_rows.core import _changed, _pairs_drop, _recorded
from banks.services.memory_rows.mentions import mentions_count
from banks.vectors import vector_literal


def rows_move(bank: Bank, target: Bank, pks: Sequence[int], *, model: str, dims: int,
              vectors: dict[int, list[float]] | None = None, actor: str, reason: str = "") -> tuple[list[str], int]:
    """Move the rows ``pks`` of ``bank`` into ``target``, whose embedder is ``model`` of ``dims``;
    ``vectors`` holds the target model's vector of each row embedded with another model (a row that
    needs one and has none stays). Returns (the ids moved, how many stayed); one ``memory.move`` event
    in each bank names the rows moved."""
    vectors = vectors or {}
    with connection.cursor() as cursor:
        # The target's tier, under the key share lock an insert takes: a bank adopting its own index
        # waits for this move, and one that adopted it before is read here.
        cursor.execute("SELECT own_vector_index FROM banks_bank WHERE id = %s FOR KEY SHARE", [target.pk])
        own = bool(cursor.fetchone()[0])
        cursor.execute(
            "SELECT m.id, m.memory_id, m.embedding_model FROM banks_memory m WHERE m.bank_id = %s "
            "AND m.id = ANY(%s) AND m.forgotten_at IS NULL "
            "AND NOT EXISTS (SELECT 1 FROM banks_memory t WHERE t.bank_id = %s AND t.memory_id = m.memory_id) "
            "AND NOT (m.archived_at IS NULL AND EXISTS (SELECT 1 FROM banks_memory t WHERE t.bank_id = %s "
            "AND t.content_hash = m.content_hash AND t.archived_at IS NULL AND t.forgotten_at IS NULL)) "
            "ORDER BY m.id FOR UPDATE",
            [bank.pk, list(pks), target.pk, target.pk])
        movable = [(pk, memory_id) for pk, memory_id, row_model in cursor.fetchall()
                   if row_model == model or pk in vectors]
        if not movable:
            return [], len(pks)
        moved = [pk for pk, _ in movable]
        left_behind = turn_context_followers(bank=bank, pks=moved)  # their contexts hold the moved turns
        fresh = [vector_literal(vectors[pk]) if pk in vectors else None for pk in moved]
        cursor.execute(
            "UPDATE banks_memory m SET bank_id = %s, own_vector_index = %s, updated_at = %s, "
            "merged_into_id = CASE WHEN m.merged_into_id = ANY(%s) THEN m.merged_into_id END, "
            "embedding = COALESCE(v.embedding::vector, m.embedding), "
            "embedding_model = CASE WHEN v.embedding IS NULL THEN m.embedding_model ELSE %s END, "
            "embedding_dims = CASE WHEN v.embedding IS NULL THEN m.embedding_dims ELSE %s END "
            "FROM unnest(%s::bigint[], %s::text[]) AS v(id, embedding) WHERE m.bank_id = %s AND m.id = v.id",
            [target.pk, own, timezone.now(), moved, model, dims, moved, fresh, bank.pk])
        cursor.execute("UPDATE banks_memory SET merged_into_id = NULL WHERE bank_id = %s AND merged_into_id = ANY(%s)",
                       [bank.pk, moved])
        _mentions_move(cursor, bank, target, moved)
        cursor.execute("UPDATE banks_memorylink SET bank_id = %s WHERE bank_id = %s AND source_id = ANY(%s) "
                       "AND target_id = ANY(%s)", [target.pk, bank.pk, moved, moved])
        cursor.execute("DELETE FROM banks_memorylink WHERE bank_id = %s AND ((source_id = ANY(%s) AND NOT "
                       "target_id = ANY(%s)) OR (target_id = ANY(%s) AND NOT source_id = ANY(%s)))",
                       [bank.pk, moved, moved, moved, moved])
    _pairs_drop(bank.pk, moved)
    turn_context_refresh(bank=bank, pks=left_behind)
    turn_context_refresh(bank=target, pks=moved, text_changed=True)
    _changed("move", target.pk, moved, from_bank_pk=bank.pk)
    ids, skipped = [memory_id for _, memory_id in movable], len(pks) - len(movable)
    _recorded(bank, "memory.move", ids, actor=actor, reason=reason, details={"target": target.bank_id, "skipped": skipped})
    _recorded(target, "memory.move", ids, actor=actor, reason=reason, details={"source": bank.bank_id})
    return ids, skipped


def _mentions_move(cursor, bank: Bank, target: Bank, moved: list[int]) -> None:  # noqa: ANN001
    # The target's entities of the same ids, in id order (two writers inserting the same new entities
    # wait for each other in one order).
    cursor.execute(
        "INSERT INTO banks_entity (bank_id, entity_id, name, entity_type, aliases, metadata, mention_count, "
        "created_at) SELECT %s, e.entity_id, e.name, e.entity_type, e.aliases, e.metadata, 0, now() "
        "FROM banks_entity e WHERE e.bank_id = %s AND e.id IN "
        "(SELECT entity_id FROM banks_memoryentity WHERE bank_id = %s AND memory_id = ANY(%s)) "
        "ORDER BY e.entity_id ON CONFLICT DO NOTHING",
        [target.pk, bank.pk, bank.pk, moved])
    cursor.execute(
        "UPDATE banks_memoryentity me SET bank_id = %s, entity_id = t.id FROM banks_entity s "
        "JOIN banks_entity t ON t.bank_id = %s AND t.entity_id = s.entity_id "
        "WHERE me.bank_id = %s AND me.memory_id = ANY(%s) AND s.bank_id = %s AND s.id = me.entity_id "
        "RETURNING s.id, t.id",
        [target.pk, target.pk, bank.pk, moved, bank.pk])
    lost: Counter[int] = Counter()  # the source bank's entities
    gained: Counter[int] = Counter()  # the target's
    counterpart: dict[int, int] = {}
    for old, new in cursor.fetchall():
        lost[old] -= 1
        gained[new] += 1
        counterpart[old] = new
    # Each bank's counters in a statement naming that bank, the lower bank first: two moves between the
    # same two banks in opposite directions lock the entity rows in one order, (bank, id).
    for bank_pk, deltas in sorted([(bank.pk, lost), (target.pk, gained)], key=lambda item: item[0]):
        mentions_count(bank_pk, dict(deltas))
    if len(counterpart) > 1:
        olds = sorted(counterpart)
        # One statement; in (a, b) order so two moves copying the same edges wait in one order.
        cursor.execute(
            "INSERT INTO banks_entitylink (bank_id, entity_a_id, entity_b_id, link_type, evidence, confidence, "
            "metadata, created_at) SELECT %s, a.new, b.new, l.link_type, l.evidence, l.confidence, l.metadata, now() "
            "FROM banks_entitylink l JOIN unnest(%s::bigint[], %s::bigint[]) AS a(old, new) ON a.old = l.entity_a_id "
            "JOIN unnest(%s::bigint[], %s::bigint[]) AS b(old, new) ON b.old = l.entity_b_id WHERE l.bank_id = %s "
            "ORDER BY a.new, b.new, l.link_type ON CONFLICT ON CONSTRAINT entity_link_unique DO NOTHING",
            [target.pk, olds, [counterpart[o] for o in olds], olds, [counterpart[o] for o in olds], bank.pk])


__all__ = ["rows_move"]
