"""The per-memory access log: its writes (one INSERT for a whole flush) and its pruning by age.

Recall, reflect and history name the memories they return; ``banks.services.usage`` gathers them with
the usage counters and hands them here when it flushes (every ``MEMORYHUB_USAGE_FLUSH_SECONDS``, off the
request), so a recall pays for a few tuples in a list, never a statement. Rows older than
``MEMORYHUB_ACCESS_LOG_DAYS`` are deleted by the beat task ``banks.prune_access_log`` a chunk at a time;
0 days turns the log off (nothing is recorded, and the prune empties it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

logger = logging.getLogger(__name__)

# (bank pk, memory id, at, kind, surface, reader)
AccessRow = tuple[int, str, datetime, str, str, str]

PRUNE_CHUNK = 10_000


def access_log_days() -> int:
    return max(0, int(getattr(settings, "MEMORYHUB_ACCESS_LOG_DAYS", 90)))


def access_log_enabled() -> bool:
    return access_log_days() > 0


def access_rows_write(cursor, rows: Sequence[AccessRow]) -> None:  # noqa: ANN001
    """All of ``rows`` in one statement (arrays unnested server-side: one round trip, one plan)."""
    if not rows:
        return
    columns = list(zip(*rows, strict=True))
    cursor.execute(
        "INSERT INTO banks_memoryaccess (bank_id, memory_id, at, kind, surface, reader) "
        "SELECT * FROM unnest(%s::bigint[], %s::varchar[], %s::timestamptz[], %s::varchar[], %s::varchar[], "
        "%s::varchar[])",
        [list(column) for column in columns])


def access_log_prune(*, now: datetime | None = None, chunk: int = PRUNE_CHUNK) -> int:
    """Delete rows older than the retention, ``chunk`` per transaction (short locks, bounded WAL per
    commit); returns how many went."""
    days = access_log_days()
    cutoff = (now or timezone.now()) - timedelta(days=days) if days else None
    removed = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            if cutoff is None:
                cursor.execute("DELETE FROM banks_memoryaccess WHERE id IN "
                               "(SELECT id FROM banks_memoryaccess LIMIT %s)", [chunk])
            else:
                cursor.execute("DELETE FROM banks_memoryaccess WHERE id IN "
                               "(SELECT id FROM banks_memoryaccess WHERE at < %s LIMIT %s)", [cutoff, chunk])
            gone = cursor.rowcount
        removed += gone
        if gone < chunk:
            break
    if removed:
        logger.info("access log: pruned %d row(s) older than %s day(s)", removed, days)
    return removed


def access_log_drop_bank(bank_pk: int, *, chunk: int = PRUNE_CHUNK) -> int:
    """A bank's whole log, a chunk per transaction (bank removal calls this before the bank row goes)."""
    removed = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            # The chunk is picked once (MATERIALIZED), then deleted in the bank's own rows.
            cursor.execute("WITH chunk AS MATERIALIZED (SELECT id FROM banks_memoryaccess WHERE bank_id = %s LIMIT %s) "
                           "DELETE FROM banks_memoryaccess a USING chunk WHERE a.bank_id = %s AND a.id = chunk.id",
                           [bank_pk, chunk, bank_pk])
            gone = cursor.rowcount
        removed += gone
        if gone < chunk:
            return removed
