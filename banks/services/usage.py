"""Recall, reflect and retain usage: per-bank counters and each memory's last recall, recorded after the answer.

Called once the answer is built, never before: a failure to record is logged and swallowed, and the
answer goes out regardless.

Counts are gathered per process and written by a background thread every
``MEMORYHUB_USAGE_FLUSH_SECONDS`` (default 1): one upsert per bank that was used in that second, and
one set-based UPDATE per bank that marks the returned memories recalled *at most once an hour each*,
skipping rows another transaction holds locked rather than waiting for them. Writing them in the
request put every recall of a bank in a queue for that bank's one counter row (and a disk flush per
request): at 30 clients it was a large share of recall latency. What a crash can lose is the last
second of counts of that process (also written on a clean exit). A flush interval of 0 writes in the
request (the test settings do, so a test reads its counts at once).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from banks.models import Bank
from banks.services.access_log import access_log_enabled, access_rows_write
from banks.services.memory_rows.upkeep import RECALL_MARK_INTERVAL, rows_mark_recalled
from memoryhub.readers import current_reader

logger = logging.getLogger(__name__)


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

@dataclass
class _BankCounts:
    recalls: int = 0
    hits: int = 0
    score: float = 0.0
    reflects: int = 0
    successes: int = 0
    errors: int = 0
    retains: int = 0
    dedups: int = 0
    last_recalled_at: datetime | None = None
    last_error_at: datetime | None = None
    marked: set[str] = field(default_factory=set)  # memory ids returned (marked at last_recalled_at)
    # The access log's rows for this bank (memory id, at, kind, surface, reader), written with the counts.
    accessed: list[tuple[str, datetime, str, str, str]] = field(default_factory=list)

    def counts_anything(self) -> bool:
        return any((self.recalls, self.reflects, self.errors, self.retains))

    def add(self, other: _BankCounts) -> None:
        for name in ("recalls", "hits", "score", "reflects", "successes", "errors", "retains", "dedups"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.last_recalled_at = _later(self.last_recalled_at, other.last_recalled_at)
        self.last_error_at = _later(self.last_error_at, other.last_error_at)
        self.marked |= other.marked
        self.accessed.extend(other.accessed)


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return max(a, b) if a and b else a or b


def _write(cursor, bank_pk: int, counts: _BankCounts) -> None:  # noqa: ANN001
    if not counts.counts_anything():  # an operator's read: only the access log has something to say
        return
    cursor.execute(_UPSERT, [bank_pk, counts.recalls, counts.hits, counts.score, counts.reflects, counts.successes,
                             counts.errors, counts.retains, counts.dedups, counts.last_recalled_at,
                             counts.last_error_at])
    if counts.marked and counts.last_recalled_at:
        # One time for all of them: the marks are kept to the hour anyway.
        rows_mark_recalled(cursor, bank_pk, sorted(counts.marked), counts.last_recalled_at)


def _write_all(pending: dict[int, _BankCounts]) -> None:
    # Counters, not data: a commit that waits for no disk flush is enough (a crash may lose the last
    # fraction of a second of them). Only in a transaction of their own: inside a caller's, the setting
    # would also cover the caller's writes.
    relaxed = not connection.in_atomic_block
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            if relaxed:
                cursor.execute("SET LOCAL synchronous_commit = off")
            for bank_pk in sorted(pending):  # one order for every writer: no deadlock between two flushes
                _write(cursor, bank_pk, pending[bank_pk])
            access_rows_write(cursor, [(bank_pk, *row) for bank_pk in sorted(pending)
                                       for row in pending[bank_pk].accessed])
    except DatabaseError:
        logger.warning("could not record usage of %d bank(s); answers were unaffected", len(pending),
                       exc_info=True)


class _UsageBuffer:
    """This process's counts not yet written, and the thread that writes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, _BankCounts] = {}
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def add(self, bank_pk: int, counts: _BankCounts) -> None:
        with self._lock:
            if self._pid != os.getpid():  # a forked child starts empty, with its own writer
                self._pending, self._thread, self._pid = {}, None, os.getpid()
            self._pending.setdefault(bank_pk, _BankCounts()).add(counts)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="usage-writer", daemon=True)
                self._thread.start()

    def take(self) -> dict[int, _BankCounts]:
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending

    def _run(self) -> None:
        flushed = time.monotonic()
        while True:
            # Short naps, so a changed interval takes effect without waiting out the old one.
            interval = max(0.05, float(settings.MEMORYHUB_USAGE_FLUSH_SECONDS))
            time.sleep(min(interval, 0.5))
            if time.monotonic() - flushed < interval:
                continue
            flushed = time.monotonic()
            pending = self.take()
            if not pending:
                # Nothing came in since the last write: hold no connection while the process is idle
                # (a busy process writes every interval and keeps it).
                connection.close()
                continue
            try:
                _write_all(pending)
                # This thread's own connection: checked (a restarted database) and not held idle forever.
                connection.close_if_unusable_or_obsolete()
            except Exception:  # the writer must outlive anything one flush meets
                logger.exception("usage writer: a flush failed")


_buffer = _UsageBuffer()


def usage_flush() -> None:
    """Write this process's gathered counts now (the writer thread does every interval, and at exit)."""
    pending = _buffer.take()
    if pending:
        _write_all(pending)


def _close_at_exit() -> None:
    try:
        usage_flush()
    finally:
        connection.close()


atexit.register(_close_at_exit)


def _record(per_bank: dict[int, _BankCounts]) -> None:
    if not per_bank:
        return
    if float(settings.MEMORYHUB_USAGE_FLUSH_SECONDS) <= 0:
        _write_all(per_bank)
        return
    for bank_pk, counts in per_bank.items():
        _buffer.add(bank_pk, counts)


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


def _accessed(memory_ids: Iterable[str], at: datetime, kind: str) -> list[tuple[str, datetime, str, str, str]]:
    """The access log's rows for one request: each memory once, by the reader the interface noted."""
    if not access_log_enabled():
        return []
    reader = current_reader()
    return [(memory_id, at, kind, reader.surface, reader.who) for memory_id in sorted(set(memory_ids))]


def usage_record_recall(banks: Sequence[Bank], hits: Sequence[object]) -> None:
    """One recall answered over ``banks`` with ``hits``. Each bank counts one recall; a bank counts a
    hit (and its best score) when at least one of the hits came from it."""
    now = timezone.now()
    grouped = _by_bank(banks, hits)
    per_bank: dict[int, _BankCounts] = {}
    for bank in _counted(banks):
        scores = [float(getattr(h, "score", 0.0)) for h in hits if getattr(h, "bank_id", "") == bank.bank_id]
        per_bank[bank.pk] = _BankCounts(recalls=1, hits=1 if scores else 0, score=max(scores, default=0.0),
                                        last_recalled_at=now, marked=set(grouped[bank.pk]),
                                        accessed=_accessed(grouped[bank.pk], now, "recall"))
    _record(per_bank)


def usage_record_access(banks: Sequence[Bank], hits: Sequence[object], *, kind: str) -> None:
    """Memories returned by a read that counts no recall (history as of a moment, an operator's
    search): the access log only."""
    now = timezone.now()
    grouped = _by_bank(banks, hits)
    _record({pk: _BankCounts(accessed=rows) for pk, ids in grouped.items()
             if (rows := _accessed(ids, now, kind))})


def usage_record_reflect(banks: Sequence[Bank], sources: Sequence[object]) -> None:
    """One reflect; it succeeded for a bank when the answer cited one of its memories."""
    now = timezone.now()
    grouped = _by_bank(banks, sources)
    _record({bank.pk: _BankCounts(reflects=1, successes=1 if grouped[bank.pk] else 0, last_recalled_at=now,
                                  marked=set(grouped[bank.pk]),
                                  accessed=_accessed(grouped[bank.pk], now, "reflect"))
             for bank in _counted(banks)})


def usage_record_retain(bank: Bank, *, deduplicated: bool) -> None:
    """One retain received over the API or MCP; whether it was a duplicate (for bank health's dedup rate)."""
    _record({counted.pk: _BankCounts(retains=1, dedups=1 if deduplicated else 0) for counted in _counted([bank])})


def usage_record_error(banks: Sequence[Bank]) -> None:
    """A recall or reflect over ``banks`` failed on our side (not a refused request)."""
    now = timezone.now()
    _record({bank.pk: _BankCounts(errors=1, last_error_at=now) for bank in _counted(banks)})


__all__ = ["RECALL_MARK_INTERVAL", "usage_flush", "usage_record_access", "usage_record_error",
           "usage_record_recall", "usage_record_reflect", "usage_record_retain"]
