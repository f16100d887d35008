"""Recomputing a bank's conversation sessions and contexts from scratch, a batch of rows at a time.

Rows stored before sessions and contexts existed have neither until they or a neighbour are written,
and a bank's new context window (``config.recall.context_turns``) reaches only the turns written after
it. ``rows_contexts_rebuild`` brings one batch of a bank's rows (keyset on the primary key) to what a
fresh insert would give them: the session key is recomputed by its trigger (``memory_session_key``,
fired by writing the metadata back unchanged), then every live turn of the batch is refreshed by
``turn_context_refresh`` as if it had just been inserted: its context and those of the turns after it
(a turn whose session was only now recognised corrects its followers, whatever batch they were in).
Vectors of the rows whose context changed are made again after the batch commits
(``turn_vectors_refresh``); rows still waiting for a vector get theirs, with the context, from the
vector fill. Archived and forgotten rows are context to nobody and are left as they are.
"""

from __future__ import annotations

from django.db import connection, transaction

from banks.models import Bank
from banks.services.memory_rows.contexts import (
    SESSION_METADATA_KEYS,
    turn_context_refresh,
    turn_vectors_refresh,
)

# Only rows whose metadata names a conversation (or that had a session) can get or lose one.
_SESSIONS_SQL = """
UPDATE banks_memory SET metadata = metadata
WHERE bank_id = %s AND id > %s AND id <= %s AND forgotten_at IS NULL
  AND (session_key IS NOT NULL OR metadata ?| %s::text[])
"""

# A row outside any session has no context (one left from a session it no longer belongs to goes).
_CLEAR_SQL = """
UPDATE banks_memory SET context = NULL
WHERE bank_id = %s AND id > %s AND id <= %s AND session_key IS NULL AND context IS NOT NULL
  AND archived_at IS NULL AND forgotten_at IS NULL
RETURNING id
"""


def rows_contexts_rebuild(*, bank: Bank, after_pk: int, batch: int, vectors: bool = True) -> tuple[int, int, int | None]:
    """Rebuild the sessions and contexts of the next ``batch`` rows of ``bank`` after ``after_pk``.

    Returns (rows looked at, contexts changed, the last pk looked at or None when the bank is done).
    One transaction per batch; the vectors follow once it commits (unless ``vectors`` is False: a bench's
    bulk load keeps its own)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*), max(id) FROM (SELECT id FROM banks_memory WHERE bank_id = %s AND id > %s "
                       "ORDER BY id LIMIT %s) s", [bank.pk, after_pk, batch])
        seen, last = cursor.fetchone()
        if last is None:
            return 0, 0, None
        cursor.execute(_SESSIONS_SQL, [bank.pk, after_pk, last, sorted(SESSION_METADATA_KEYS)])
        cursor.execute(_CLEAR_SQL, [bank.pk, after_pk, last])
        cleared = [row[0] for row in cursor.fetchall()]
        if cleared and vectors:
            transaction.on_commit(lambda: turn_vectors_refresh(bank=bank, pks=cleared), robust=True)
        cursor.execute("SELECT id FROM banks_memory WHERE bank_id = %s AND id > %s AND id <= %s "
                       "AND session_key IS NOT NULL AND archived_at IS NULL AND forgotten_at IS NULL",
                       [bank.pk, after_pk, last])
        turns = [row[0] for row in cursor.fetchall()]
        changed = turn_context_refresh(bank=bank, pks=turns, vectors=vectors) if turns else 0
        return int(seen), changed + len(cleared), int(last)


__all__ = ["rows_contexts_rebuild"]
