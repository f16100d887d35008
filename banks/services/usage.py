"""Recall, reflect and retain usage: per-bank counters and each memory's last recall, recorded after the answer.

Called once the answer is built, never before: a failure to record is logged and swallowed (inside
a savepoint, so the caller's transaction stays usable), and the answer goes out regardless.

Cost per request: one upsert per bank touched, and one set-based UPDATE per bank that marks the
returned memories recalled *at most once an hour each* (a memory recalled 10 times a minute is
written once an hour), skipping rows another transaction holds locked rather than waiting for them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from banks.models import Bank

logger = logging.getLogger(__name__)

# A memory's last recall is kept to this precision; finer would cost a write per hit.
RECALL_MARK_INTERVAL = "1 hour"

_UPSERT = """
    INSERT INTO banks_bankusage (bank_id, recall_count, recall_hit_count, recall_score_sum, reflect_count,
                                 reflect_success_count, error_count, retain_call_count, retain_dedup_count,
                                 last_recalled_at, last_error_at)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (bank_id) DO UPDATE SET
        recall_count = banks_bankusage.recall_count + EXCLUDED.recall_count,
        recall_hit_count = banks_bankusage.recall_hit_count + EXCLUDED.recall_hit_count,
        recall_score_sum = banks_bankusage.recall_score_sum + EXCLUDED.recall_score_sum,
        reflect_count = banks_bankusage.reflect_count + EXCLUDED.reflect_count,
        reflect_success_count = banks_bankusage.reflect_success_count + EXCLUDED.reflect_success_count,
        error_count = banks_bankusage.error_count + EXCLUDED.error_count,
        retain_call_count = banks_bankusage.retain_call_count + EXCLUDED.retain_call_count,
        retain_dedup_count = banks_bankusage.retain_dedup_count + EXCLUDED.retain_dedup_count,
        last_recalled_at = GREATEST(banks_bankusage.last_recalled_at, EXCLUDED.last_recalled_at),
        last_error_at = GREATEST(banks_bankusage.last_error_at, EXCLUDED.last_error_at)
"""

# S608 vetted: the interval is a module constant; every value is a parameter.
_MARK = f"""
    UPDATE banks_memory SET last_recalled_at = %s
    WHERE id IN (
        SELECT id FROM banks_memory
        WHERE bank_id = %s AND memory_id = ANY(%s)
          AND (last_recalled_at IS NULL OR last_recalled_at < %s - interval '{RECALL_MARK_INTERVAL}')
        FOR UPDATE SKIP LOCKED)
"""  # noqa: S608


def _bump(cursor, bank_pk: int, *, now: datetime, recalls: int = 0, hits: int = 0, score: float = 0.0,  # noqa: ANN001
          reflects: int = 0, successes: int = 0, errors: int = 0, retains: int = 0, dedups: int = 0) -> None:
    cursor.execute(_UPSERT, [bank_pk, recalls, hits, score, reflects, successes, errors, retains, dedups,
                             now if recalls or reflects else None, now if errors else None])


def _mark(cursor, bank_pk: int, memory_ids: list[str], now: datetime) -> None:  # noqa: ANN001
    if memory_ids:
        cursor.execute(_MARK, [now, bank_pk, memory_ids, now])


def _safely(what: str, write) -> None:  # noqa: ANN001
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            write(cursor)
    except DatabaseError:
        logger.warning("could not record %s usage; the answer is unaffected", what, exc_info=True)


def _counted(banks: Sequence[Bank]) -> list[Bank]:
    """Banks that exist: a granted bank nothing was written to has no row to count against."""
    return [b for b in banks if b.pk is not None and not b.is_never_written]


def _by_bank(banks: Sequence[Bank], hits: Iterable[object]) -> dict[int, list[str]]:
    """Memory ids of ``hits`` per bank pk (hits of other layers name no memory row and match nothing)."""
    pk_of = {b.bank_id: b.pk for b in _counted(banks)}
    grouped: dict[int, list[str]] = {pk: [] for pk in pk_of.values()}
    for hit in hits:
        pk = pk_of.get(getattr(hit, "bank_id", ""))
        if pk is not None and getattr(hit, "layer", "fact") == "fact":
            grouped[pk].append(str(getattr(hit, "memory_id", "")))
    return grouped


def usage_record_recall(banks: Sequence[Bank], hits: Sequence[object]) -> None:
    """One recall answered over ``banks`` with ``hits``. Each bank counts one recall; a bank counts a
    hit (and its best score) when at least one of the hits came from it."""
    now = timezone.now()
    grouped = _by_bank(banks, hits)

    def write(cursor) -> None:  # noqa: ANN001
        for bank in _counted(banks):
            scores = [float(getattr(h, "score", 0.0)) for h in hits if getattr(h, "bank_id", "") == bank.bank_id]
            _bump(cursor, bank.pk, now=now, recalls=1, hits=1 if scores else 0, score=max(scores, default=0.0))
            _mark(cursor, bank.pk, grouped[bank.pk], now)

    _safely("recall", write)


def usage_record_reflect(banks: Sequence[Bank], sources: Sequence[object]) -> None:
    """One reflect; it succeeded for a bank when the answer cited one of its memories."""
    now = timezone.now()
    grouped = _by_bank(banks, sources)

    def write(cursor) -> None:  # noqa: ANN001
        for bank in _counted(banks):
            _bump(cursor, bank.pk, now=now, reflects=1, successes=1 if grouped[bank.pk] else 0)
            _mark(cursor, bank.pk, grouped[bank.pk], now)

    _safely("reflect", write)


def usage_record_retain(bank: Bank, *, deduplicated: bool) -> None:
    """One retain received over the API or MCP; whether it was a duplicate (for bank health's dedup rate)."""
    now = timezone.now()

    def write(cursor) -> None:  # noqa: ANN001
        for counted in _counted([bank]):
            _bump(cursor, counted.pk, now=now, retains=1, dedups=1 if deduplicated else 0)

    _safely("retain", write)


def usage_record_error(banks: Sequence[Bank]) -> None:
    """A recall or reflect over ``banks`` failed on our side (not a refused request)."""
    now = timezone.now()

    def write(cursor) -> None:  # noqa: ANN001
        for bank in _counted(banks):
            _bump(cursor, bank.pk, now=now, errors=1)

    _safely("error", write)


__all__ = ["RECALL_MARK_INTERVAL", "usage_record_error", "usage_record_recall", "usage_record_reflect",
           "usage_record_retain"]
