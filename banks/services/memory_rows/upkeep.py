"""Upkeep of memory rows that changes no text: vectors, the vector-index tier, the search configuration,
recall marks, merge pointers, "not a duplicate" notes and the repair of unreadable times. Each is one set-based statement; the callers
(the re-embed and vector-fill jobs, the language change, recall usage, archive restore, the review
page) decide when.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

# A memory's last recall is kept to this precision; finer would cost a write per hit.
RECALL_MARK_INTERVAL = "1 hour"

# S608 vetted: the interval is a module constant; every value is a parameter.
# The rows are picked (and locked) once, then updated in the bank's own rows. With the bank named on an
# outer UPDATE and the picking as its sub-select, a test's statement spun for minutes: a semi-join may
# run its inner side once per outer row, and here the inner side locks rows.
_MARK = f"""
    WITH picked AS MATERIALIZED (
        SELECT id FROM banks_memory
        WHERE bank_id = %s AND memory_id = ANY(%s)
          AND (last_recalled_at IS NULL OR last_recalled_at < %s - interval '{RECALL_MARK_INTERVAL}')
        FOR UPDATE SKIP LOCKED)
    UPDATE banks_memory m SET last_recalled_at = %s
    FROM picked WHERE m.bank_id = %s AND m.id = picked.id
"""  # noqa: S608


def rows_mark_recalled(cursor, bank_pk: int, memory_ids: list[str], now: datetime) -> None:  # noqa: ANN001
    """Mark memories recalled at ``now``, at most once an hour each, skipping rows another transaction
    holds (a recall never waits for a writer); on the caller's cursor (usage flushes batch them)."""
    if memory_ids:
        cursor.execute(_MARK, [bank_pk, memory_ids, now, now, bank_pk])


def rows_vectors_fill(bank_pk: int, pks: Sequence[int], literals: Sequence[str], model: str, dims: int) -> None:
    """Store the vectors of rows a big import stored without them (only rows still waiting: an edit
    meanwhile stored the vector of its new text itself)."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE IF NOT EXISTS memory_vector_staging (id bigint, embedding vector) "
                       "ON COMMIT DELETE ROWS")
        with cursor.cursor.copy("COPY memory_vector_staging (id, embedding) FROM STDIN") as copy:
            for pk, literal in zip(pks, literals, strict=True):
                copy.write_row((pk, literal))
        cursor.execute("UPDATE banks_memory m SET embedding = s.embedding, embedding_model = %s, embedding_dims = %s "
                       "FROM memory_vector_staging s WHERE m.bank_id = %s AND m.id = s.id AND m.embedding_dims IS NULL",
                       [model, dims, bank_pk])


def rows_reembed(bank_pk: int, pks: Sequence[int], literals: Sequence[str], model: str, dims: int) -> None:
    """Replace the vectors of the rows ``pks`` of a bank with ``model``'s (the re-embed job), in one
    statement. The bank is named so the update goes to the bank's rows alone (its shard, its keys)."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE banks_memory m SET embedding = v.embedding::vector, embedding_model = %s, "
                       "embedding_dims = %s FROM unnest(%s::bigint[], %s::text[]) AS v(id, embedding) "
                       "WHERE m.bank_id = %s AND m.id = v.id", [model, dims, list(pks), list(literals), bank_pk])


def rows_vector_tier_adopt(bank_pk: int) -> None:
    """Flag every row of a bank that moved onto its own vector index (the caller holds the bank's row)."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE banks_memory SET own_vector_index = true WHERE bank_id = %s AND NOT own_vector_index",
                       [bank_pk])


def rows_search_config_apply(bank_pk: int, after_pk: int, last_pk: int, config: str) -> int:
    """Re-compute the rows ``(after_pk, last_pk]`` of a bank in text search configuration ``config``."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE banks_memory SET search_config = %s::regconfig WHERE bank_id = %s AND id > %s "
                       "AND id <= %s AND search_config <> %s::regconfig", [config, bank_pk, after_pk, last_pk, config])
        return int(cursor.rowcount)


def rows_merged_into_set(bank_pk: int, merged: Sequence[tuple[str, str]]) -> None:
    """Point each ``(memory_id, into_id)`` of a restored bank at its survivor, in one statement."""
    if not merged:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE banks_memory AS t SET merged_into_id = m.id FROM unnest(%s::varchar[], %s::varchar[]) "
            "AS v(memory_id, into_id) JOIN banks_memory AS m ON m.bank_id = %s AND m.memory_id = v.into_id "
            "WHERE t.bank_id = %s AND t.memory_id = v.memory_id",
            [[m for m, _ in merged], [i for _, i in merged], bank_pk, bank_pk])


def rows_not_duplicates_note(bank_pk: int, pks: Sequence[int], memory_ids: Sequence[str]) -> None:
    """Note in each row's metadata (``_not_duplicate_of``) the others of ``memory_ids``, added to what it
    already lists, in one statement on the rows as they are."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE banks_memory SET metadata = jsonb_set(COALESCE(metadata, '{}'::jsonb), '{_not_duplicate_of}', "
            "COALESCE((SELECT jsonb_agg(x ORDER BY x) FROM (SELECT jsonb_array_elements_text(COALESCE("
            "metadata->'_not_duplicate_of', '[]'::jsonb)) UNION SELECT unnest(%s::text[])) AS s(x) "
            "WHERE x <> memory_id), '[]'::jsonb)) WHERE bank_id = %s AND id = ANY(%s)",
            [list(memory_ids), bank_pk, list(pks)])


# A time no reader can show (UTC outside years 1..9999, stored before times were checked at every edge)
# and what takes its place; where the time meant something, the original is kept as text in the metadata.
_TIME_FIXES = {
    "occurred_at": "occurred_at = NULL, metadata = metadata || jsonb_build_object('_repaired_occurred_at', "
                   "occurred_at::text)",
    "created_at": "created_at = CASE WHEN retained_at BETWEEN %(earliest)s AND %(latest)s THEN retained_at "
                  "ELSE now() END, metadata = metadata || jsonb_build_object('_repaired_created_at', "
                  "created_at::text)",
    "retained_at": "retained_at = now()",
}


def rows_times_repair(cursor: Any, column: str, earliest: datetime, latest: datetime) -> int:
    """Repair every row whose ``column`` (a key of ``_TIME_FIXES``) lies outside ``[earliest, latest]``,
    in one statement on the caller's cursor (``manage.py check_banks``); returns how many."""
    fix = _TIME_FIXES[column]
    # S608 vetted: the column and its fix come from the constant above, never from input.
    cursor.execute(f"UPDATE banks_memory SET {fix} WHERE {column} < %(earliest)s OR {column} > %(latest)s",  # noqa: S608
                   {"earliest": earliest, "latest": latest})
    return int(cursor.rowcount)


__all__ = ["RECALL_MARK_INTERVAL", "rows_mark_recalled", "rows_merged_into_set", "rows_not_duplicates_note",
           "rows_reembed", "rows_search_config_apply", "rows_times_repair", "rows_vector_tier_adopt",
           "rows_vectors_fill"]
