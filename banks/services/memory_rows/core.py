"""Inserting, editing, archiving, restoring, forgetting and erasing memory rows; mention counters.

Every function runs in its caller's transaction (a bulk action's chunk, an import's batch, a retain)
and is set-based: one statement for the rows, one for their mentions and counters, whatever the
number of rows.

Tagging, untagging, archiving, restoring, forgetting, erasing and deleting record themselves: each writes
one audit event naming the rows it changed (none when it changed none), with the rows, so whoever calls
(REST, the operator pages, the admin, MCP, commands, imports, tasks) the log reads the same. The caller
gives who (``actor``) and why (``reason``, and ``details`` such as the criteria of a forget).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from banks.models import Bank, DuplicatePair, Memory, MemoryLink, ObservationEvidence
from banks.models.bank_scoped import bank_rows_delete
from banks.models.rows import insert_row
from banks.services.audit import audit_record
from banks.services.bulk_memories import COLUMNS, MemoryRow
from banks.services.memory_rows.contexts import turn_context_followers, turn_context_refresh
from banks.services.memory_rows.mentions import mentions_drop
from banks.vectors import vector_literal
from memoryhub.errors import Conflict, violated_constraint


@dataclass(frozen=True)
class RowsChanged:
    """What a hook is told: ``kind`` (insert, overwrite, move, erase, delete), the bank the rows are in
    now, their primary keys, and for a move the bank they left."""

    kind: str
    bank_pk: int
    pks: tuple[int, ...]
    from_bank_pk: int | None = None


_HOOKS: list[Callable[[RowsChanged], None]] = []


def on_rows_changed(hook: Callable[[RowsChanged], None]) -> Callable[[RowsChanged], None]:
    """Register ``hook``: it runs inside the writer's transaction after rows were inserted, overwritten,
    moved or erased (what depends on a neighbouring row refreshes there, and rolls back with it)."""
    if hook not in _HOOKS:
        _HOOKS.append(hook)
    return hook


def _changed(kind: str, bank_pk: int, pks: Iterable[int], from_bank_pk: int | None = None) -> None:
    keys = tuple(pks)
    if keys:
        for hook in list(_HOOKS):
            hook(RowsChanged(kind=kind, bank_pk=bank_pk, pks=keys, from_bank_pk=from_bank_pk))


def ensure_editable(memory: Memory) -> None:
    """A forgotten memory is a tombstone: its text was taken out of recall (or purged) on purpose."""
    if memory.forgotten_at is not None:
        raise Conflict(f"Memory '{memory.memory_id}' was forgotten: a tombstone cannot be edited",
                       memory_id=memory.memory_id)


def _pairs_drop(bank_pk: int, memory_pks: Sequence[int]) -> None:
    """Near-duplicate pairs were measured on a text that changed or left the bank."""
    DuplicatePair.objects.filter(Q(memory_a_id__in=memory_pks) | Q(memory_b_id__in=memory_pks), bank_id=bank_pk).delete()


# --- inserts ----------------------------------------------------------------------------------------

def row_insert(memory: Memory) -> None:
    """Store the new ``memory`` (a retain), taking back its id and what the insert triggers derived
    from its bank (the vector-index tier, the text search configuration)."""
    # The vector rounded to the single precision it is stored in, then written in nine digits, which
    # give those values back exactly: the same stored vector as the field's own formatting (seventeen
    # digits, rounded by the server), in a third of the Python time and two thirds of the text.
    embedding = memory.embedding
    literal = _literal(array("f", embedding) if embedding is not None and not isinstance(embedding, str) else embedding)
    memory.pk, memory.own_vector_index, memory.search_config, memory.session_key = insert_row(
        memory, (*COLUMNS, "context"), ("id", "own_vector_index", "search_config", "session_key"),
        formatted={"embedding": literal})
    if memory.session_key:
        # A conversation turn: its context, and its followers' when it arrived late (banks.services.memory_rows.contexts).
        # A context computed before the insert (``turn_context_ahead``, its vector made with it) is found current.
        turn_context_refresh(bank=memory.bank, pks=[memory.pk])
    _changed("insert", memory.bank_id, [memory.pk])


def _staging_sql() -> str:
    return ("CREATE TEMP TABLE IF NOT EXISTS memory_bulk_staging ("
            "bank_id bigint, memory_id varchar(255), text text, fact_type varchar(64), memory_layer varchar(64), "
            "tags varchar(255)[], metadata jsonb, occurred_at timestamptz, retained_at timestamptz, "
            "created_at timestamptz, updated_at timestamptz, source varchar(2048), pii boolean, "
            "content_hash varchar(64), embedding vector, embedding_model varchar(200), "
            "embedding_dims smallint, context text) ON COMMIT DELETE ROWS")


def _literal(embedding: Sequence[float] | str | None) -> str | None:
    if embedding is None or isinstance(embedding, str):
        return embedding
    return vector_literal(list(embedding))


def rows_insert(bank_pk: int, rows: Sequence[MemoryRow], now: datetime) -> dict[str, int]:
    """Store ``rows`` in bank ``bank_pk`` (COPY into a staging table, one INSERT ... SELECT); return
    ``{memory_id: pk}`` of the rows that landed (see banks.services.bulk_memories for why this shape).

    Must run inside a transaction (the staging rows vanish at commit). A row whose ``memory_id`` or
    live content is already in the bank is left out of the result.
    """
    if not rows:
        return {}
    columns = ", ".join((*COLUMNS, "context"))
    with connection.cursor() as cursor:
        cursor.execute(_staging_sql())
        cursor.execute("TRUNCATE memory_bulk_staging")
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY memory_bulk_staging ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row((
                    bank_pk, row.memory_id, row.text, row.fact_type, row.memory_layer, list(row.tags),
                    json.dumps(row.metadata), row.occurred_at, row.retained_at, row.created_at, now, row.source,
                    False, row.content_hash, _literal(row.embedding), row.embedding_model, row.embedding_dims,
                    row.context,
                ))
        # The bank's vector tier, under the same key share lock the row trigger takes (a bank moving to
        # its own index waits for this batch); passing it spares the trigger a lookup per row.
        cursor.execute("SELECT own_vector_index FROM banks_bank WHERE id = %s FOR KEY SHARE", [bank_pk])
        own = bool(cursor.fetchone()[0])
        # In the archive's order (keys follow it, and lists ordered by key with them). Vetted: {columns}
        # is the fixed column list; the flag is a parameter.
        cursor.execute(
            f"INSERT INTO banks_memory ({columns}, own_vector_index) "  # noqa: S608
            f"SELECT {columns}, %s FROM memory_bulk_staging ON CONFLICT DO NOTHING RETURNING memory_id, id", [own])
        landed = {memory_id: pk for memory_id, pk in cursor.fetchall()}
    if landed:
        # Contexts the writer computed ahead (its vectors made with them) are found current: not embedded again.
        turn_context_refresh(bank=Bank.objects.get(pk=bank_pk), pks=landed.values())
    _changed("insert", bank_pk, landed.values())
    return landed


def _recorded(bank: Bank, action: str, memory_ids: Sequence[str], *, actor: str, reason: str,
              details: dict[str, Any] | None, compliance: bool = False) -> None:
    if memory_ids:  # in the caller's transaction, with the rows
        audit_record(actor=actor, action=action, bank=bank, target_ids=memory_ids, reason=reason,
                     compliance=compliance, details=details)


# --- edits ------------------------------------------------------------------------------------------

def row_overwrite(bank: Bank, pk: int, values: dict[str, Any], *, mentions: bool = True) -> bool:
    """Replace the row ``pk`` of ``bank`` with ``values`` (an import's overwrite: an archived row comes
    back live; a tombstone is refused). Its mentions and near-duplicate pairs went with the old text (counters moved); the caller
    attaches the new ones. With ``mentions`` False the caller takes the old mentions itself
    (``mentions_take``, counted with the new ones in one pass). False, and nothing written, when another
    live row holds the new text."""
    try:
        with transaction.atomic():
            # Never a tombstone: what was forgotten (or erased) stays so.
            written = Memory.objects.filter(pk=pk, bank_id=bank.pk, forgotten_at__isnull=True).update(
                **values, archived_at=None)
            if not written:
                return False
            if mentions:
                mentions_drop(bank.pk, [pk])
            _pairs_drop(bank.pk, [pk])
            turn_context_refresh(bank=bank, pks=[pk], text_changed=True)
            _changed("overwrite", bank.pk, [pk])
    except IntegrityError as exc:
        if violated_constraint(exc) == "memory_content_unique_per_bank":
            return False
        raise
    return True


_TAGS_CHANGE = ("ARRAY(SELECT t FROM unnest(tags || %s::varchar[]) WITH ORDINALITY AS x(t, n) "
                "WHERE NOT (t = ANY(%s::varchar[])) GROUP BY t ORDER BY min(n))")


def row_update(memory: Memory, fields: Sequence[str], *, tags_before: Sequence[str] | None = None) -> None:
    """Write the changed ``fields`` of ``memory`` (as set on the instance); refuses a tombstone, also one
    forgotten since it was loaded. Tags are written as the change from ``tags_before`` (what the editor
    saw), applied to the row as it is now: a tag a bulk action added meanwhile stays."""
    ensure_editable(memory)
    now = timezone.now()
    values = {name: getattr(memory, name) for name in fields if name != "tags"}
    # A turn's text is its followers' context; its metadata and times place it in a session.
    placed = {"text", "metadata", "created_at", "occurred_at"} & set(fields)
    with transaction.atomic():
        followers = turn_context_followers(bank=memory.bank, pks=[memory.pk]) if placed else []
        written = Memory.objects.filter(bank_id=memory.bank_id, pk=memory.pk, forgotten_at__isnull=True).update(
            **values, updated_at=now)
        if written and "tags" in fields:
            before = list(tags_before if tags_before is not None else [])
            added = [t for t in memory.tags if t not in before]
            removed = [t for t in before if t not in memory.tags] if tags_before is not None else []
            with connection.cursor() as cursor:
                # Vetted: the statement is a module constant; values are parameters.
                cursor.execute(f"UPDATE banks_memory SET tags = {_TAGS_CHANGE} WHERE bank_id = %s "  # noqa: S608
                               "AND id = %s RETURNING tags", [added, removed, memory.bank_id, memory.pk])
                memory.tags = list(cursor.fetchone()[0])
        if not written:
            raise Conflict(f"Memory '{memory.memory_id}' was forgotten: a tombstone cannot be edited",
                           memory_id=memory.memory_id)
        if "text" in fields:
            _pairs_drop(memory.bank_id, [memory.pk])
        if placed:
            turn_context_refresh(bank=memory.bank, pks=[memory.pk, *followers], text_changed="text" in fields)
    memory.updated_at = now


def rows_tag(bank: Bank, pks: Sequence[int], tag: str, *, actor: str, reason: str = "") -> list[str]:
    """Add ``tag`` to the rows that lack it, in one statement on the rows as they are (no read-modify-
    write: a concurrent edit of the same row keeps its change). Tombstones and rows at the tag limit
    are left alone. Returns the ids of the rows changed, in key order; one ``memory.tag`` event names them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE banks_memory SET tags = array_append(tags, %s::varchar), updated_at = %s "
            "WHERE bank_id = %s AND id = ANY(%s) AND forgotten_at IS NULL "
            "AND NOT (tags @> ARRAY[%s]::varchar[]) AND cardinality(tags) < %s RETURNING id, memory_id",
            [tag, timezone.now(), bank.pk, list(pks), tag, settings.MEMORYHUB_MAX_TAGS])
        changed = [memory_id for _, memory_id in sorted(cursor.fetchall())]
    _recorded(bank, "memory.tag", changed, actor=actor, reason=reason, details={"tag": tag})
    return changed


def rows_untag(bank: Bank, pks: Sequence[int], tag: str, *, actor: str, reason: str = "") -> list[str]:
    """Remove ``tag`` from the rows holding it, in one statement (see rows_tag); one ``memory.untag`` event."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE banks_memory SET tags = array_remove(tags, %s::varchar), updated_at = %s "
            "WHERE bank_id = %s AND id = ANY(%s) AND forgotten_at IS NULL AND tags @> ARRAY[%s]::varchar[] "
            "RETURNING id, memory_id", [tag, timezone.now(), bank.pk, list(pks), tag])
        changed = [memory_id for _, memory_id in sorted(cursor.fetchall())]
    _recorded(bank, "memory.untag", changed, actor=actor, reason=reason, details={"tag": tag})
    return changed


# --- lifecycle --------------------------------------------------------------------------------------

def _where(bank: Bank, memory_ids: Sequence[str] | None, pks: Sequence[int] | None) -> tuple[str, list[Any]]:
    if pks is not None:
        return "bank_id = %s AND id = ANY(%s)", [bank.pk, list(pks)]
    return "bank_id = %s AND memory_id = ANY(%s::varchar[])", [bank.pk, list(memory_ids or [])]


def rows_archive(bank: Bank, *, memory_ids: Sequence[str] | None = None, pks: Sequence[int] | None = None,
                 actor: str, reason: str = "", details: dict[str, Any] | None = None,
                 now: datetime | None = None) -> list[str]:
    """Archive the live ones among the rows named (by id or key); returns the ids archived, recorded in
    one ``memory.archive`` event."""
    ids = [memory_id for _, memory_id in _archive(bank, memory_ids, pks, None, now or timezone.now())]
    _recorded(bank, "memory.archive", ids, actor=actor, reason=reason, details=details)
    return ids


def rows_merge_into(bank: Bank, survivor: Memory, pks: Sequence[int], *, actor: str, reason: str = "",
                    now: datetime | None = None) -> list[str]:
    """Archive the live rows ``pks`` as merged into ``survivor`` (their ``merged_into``); returns their
    ids in the order given, recorded in one ``memory.merge`` event naming the survivor first."""
    order = {pk: n for n, pk in enumerate(pks)}
    archived = dict(_archive(bank, None, pks, survivor.pk, now or timezone.now()))
    merged = [archived[pk] for pk in sorted(archived, key=order.__getitem__)]
    _recorded(bank, "memory.merge", [survivor.memory_id, *merged], actor=actor, reason=reason,
              details={"survivor": survivor.memory_id, "merged": merged})
    return merged


def _archive(bank: Bank, memory_ids: Sequence[str] | None, pks: Sequence[int] | None, merged_into: int | None,
             now: datetime) -> list[tuple[int, str]]:
    """(key, id) of the rows archived."""
    where, params = _where(bank, memory_ids, pks)
    with connection.cursor() as cursor:
        # Vetted: {where} is one of two fixed conditions; values are parameters.
        cursor.execute("UPDATE banks_memory SET archived_at = %s, updated_at = %s, "  # noqa: S608
                       "merged_into_id = COALESCE(%s, merged_into_id) "
                       f"WHERE {where} AND archived_at IS NULL AND forgotten_at IS NULL RETURNING memory_id, id",
                       [now, now, merged_into, *params])
        rows = cursor.fetchall()
    # An archived turn is no longer context to the next ones of its session.
    turn_context_refresh(bank=bank, pks=[row[1] for row in rows])
    return [(pk, memory_id) for memory_id, pk in rows]


def rows_restore(bank: Bank, pks: Sequence[int], now: datetime | None = None, *, actor: str,
                 reason: str = "") -> list[str]:
    """Bring archived rows back (never a tombstone); the caller checked that their content is free.
    Returns the ids restored, in key order, and records them in one ``memory.restore`` audit event
    (none when nothing came back): whoever restores, the event is written here, with the rows."""
    now = now or timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE banks_memory SET archived_at = NULL, updated_at = %s WHERE bank_id = %s "
                       "AND id = ANY(%s) AND archived_at IS NOT NULL AND forgotten_at IS NULL "
                       "RETURNING id, memory_id", [now, bank.pk, list(pks)])
        restored = [memory_id for _, memory_id in sorted(cursor.fetchall())]
    turn_context_refresh(bank=bank, pks=pks)
    _recorded(bank, "memory.restore", restored, actor=actor, reason=reason, details=None)
    return restored


def rows_forget(bank: Bank, *, memory_ids: Sequence[str] | None = None, pks: Sequence[int] | None = None,
                actor: str, reason: str = "", details: dict[str, Any] | None = None,
                now: datetime | None = None) -> list[str]:
    """Tombstone the rows named that are not yet (history ``as_of`` an earlier moment still sees them);
    returns the ids forgotten, recorded in one ``memory.forget`` event."""
    now = now or timezone.now()
    where, params = _where(bank, memory_ids, pks)
    with connection.cursor() as cursor:
        # Vetted: {where} is one of two fixed conditions; values are parameters.
        cursor.execute(f"UPDATE banks_memory SET forgotten_at = %s, updated_at = %s WHERE {where} "  # noqa: S608
                       "AND forgotten_at IS NULL RETURNING memory_id, id", [now, now, *params])
        rows = cursor.fetchall()
    turn_context_refresh(bank=bank, pks=[row[1] for row in rows])
    ids = [row[0] for row in rows]
    _recorded(bank, "memory.forget", ids, actor=actor, reason=reason, details=details)
    return ids


def rows_erase(bank: Bank, memory_ids: Sequence[str], now: datetime | None = None, *, actor: str,
               reason: str = "", details: dict[str, Any] | None = None) -> list[str]:
    """Purge the text, vector, metadata, tags, mentions (counters moved), near-duplicate pairs and the
    text a merge link kept of the rows named, and detach the observation evidence citing them (it keeps
    the memory id as text); each stays as a tombstone for the changes feed. Returns the ids erased,
    recorded in one ``memory.erase`` event (a compliance one)."""
    now = now or timezone.now()
    rows = list(Memory.objects.filter(bank=bank, memory_id__in=list(memory_ids)).values_list("pk", "memory_id"))
    pks = [pk for pk, _ in rows]
    if not pks:
        return []
    mentions_drop(bank.pk, pks)
    _pairs_drop(bank.pk, pks)
    MemoryLink.objects.filter(bank=bank, source_id__in=pks).update(metadata={})
    # What removing the rows would do (the foreign key's SET_NULL, banks.models.bank_scoped.bank_rows_delete).
    ObservationEvidence.objects.filter(bank=bank, memory_id__in=pks).update(memory=None)
    # The turns after them hold their text in their contexts: read now, refreshed once it is purged.
    followers = turn_context_followers(bank=bank, pks=pks)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE banks_memory SET text = '', embedding = NULL, metadata = '{}'::jsonb, tags = '{}', "
                       "source = NULL, content_hash = '', pii = false, context = NULL, "
                       "forgotten_at = COALESCE(forgotten_at, %s), updated_at = %s WHERE bank_id = %s AND id = ANY(%s)",
                       [now, now, bank.pk, pks])
    turn_context_refresh(bank=bank, pks=followers)
    _changed("erase", bank.pk, pks)
    ids = [memory_id for _, memory_id in rows]
    _recorded(bank, "memory.erase", ids, actor=actor, reason=reason, details=details, compliance=True)
    return ids


def rows_delete(bank: Bank, pks: Sequence[int], *, actor: str, reason: str = "",
                details: dict[str, Any] | None = None) -> int:
    """Remove rows for good (a compliance erasure); their mentions' counters move first. One
    ``memory.erase`` event (a compliance one) names the rows removed."""
    if not pks:
        return 0
    ids = list(Memory.objects.filter(bank_id=bank.pk, pk__in=list(pks)).order_by("pk").values_list("memory_id", flat=True))
    mentions_drop(bank.pk, pks)
    followers = turn_context_followers(bank=bank, pks=pks)
    # Not QuerySet.delete(): its cascade addresses the links, pairs and evidence by memory id alone.
    deleted = bank_rows_delete(Memory, bank.pk, list(pks)).get("banks.Memory", 0)
    turn_context_refresh(bank=bank, pks=followers)
    _changed("delete", bank.pk, pks)
    _recorded(bank, "memory.erase", ids, actor=actor, reason=reason, details=details, compliance=True)
    return int(deleted)


__all__ = [
    "RowsChanged", "ensure_editable", "on_rows_changed", "row_insert", "row_overwrite", "row_update",
    "rows_archive", "rows_delete", "rows_erase", "rows_forget", "rows_insert", "rows_merge_into", "rows_restore",
    "rows_tag", "rows_untag",
]
