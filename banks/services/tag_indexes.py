"""Vector indexes of their own for the big tags of big banks (banks.models.tag_indexes says why).

A periodic job (``banks.index_tags``) looks at the banks big enough to keep word statistics
(banks.services.text_statistics): each time a bank's size has moved by more than ``DRIFT`` since its
tags were last counted, it counts them again, chooses which to index (banks.vector_tags), drops the
indexes of tags no longer chosen and builds the new ones, ``CONCURRENTLY``, one at a time. Until an
index is built, recall reads or walks as it did before; nothing waits for it.

A bulk load big enough to rebuild the bank's own index drops the bank's tag indexes first (banks.
services.vector_indexes): keeping them up row by row would cost the load what its own index is
spared. The next periodic pass builds them again.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection
from django.utils import timezone

from banks.models import Bank, BankTagIndex, BankTextStatistics
from banks.partitions import bank_partition
from banks.providers import bank_embedder
from banks.services.index_builds import index_build_settings
from banks.services.locks import BANK_LOAD_LOCK, TAG_INDEX_LOCK, bank_lock_key
from banks.services.text_statistics import DRIFT
from banks.vector_tags import choose_tags, tag_index_name, tag_index_sql

logger = logging.getLogger(__name__)

def tag_index_min_rows() -> int:
    return int(getattr(settings, "MEMORYHUB_TAG_INDEX_MIN", 10_000))


def _try_session_lock(cursor, lock_class: int, bank_pk: int) -> bool:  # noqa: ANN001
    cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [lock_class, bank_lock_key(bank_pk)])
    return bool(cursor.fetchone()[0])


def _unlock(cursor, lock_class: int, bank_pk: int) -> None:  # noqa: ANN001
    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [lock_class, bank_lock_key(bank_pk)])


def bank_tag_counts(bank: Bank, dims: int) -> tuple[int, list[tuple[str, int]]]:
    """The bank's live memories with a vector of ``dims``, and each tag held by at least the minimum of them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM banks_memory WHERE bank_id = %s AND archived_at IS NULL "
                       "AND forgotten_at IS NULL AND embedding_dims = %s", [bank.pk, dims])
        live_rows = int(cursor.fetchone()[0])
        cursor.execute("SELECT t, count(*) FROM banks_memory m CROSS JOIN LATERAL unnest(m.tags) t "
                       "WHERE m.bank_id = %s AND m.archived_at IS NULL AND m.forgotten_at IS NULL "
                       "AND m.embedding_dims = %s GROUP BY t HAVING count(*) >= %s",
                       [bank.pk, dims, tag_index_min_rows()])
        return live_rows, [(str(t), int(n)) for t, n in cursor.fetchall()]


def _drop(index: BankTagIndex) -> None:
    how = "" if connection.in_atomic_block else "CONCURRENTLY "
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {how}IF EXISTS {tag_index_name(index.pk)}")
    index.delete()


def _index_state(cursor, index: BankTagIndex) -> bool | None:  # noqa: ANN001
    """True: built and valid; False: left invalid (a build killed half way); None: missing."""
    cursor.execute("SELECT indisvalid AND indisready FROM pg_index WHERE indexrelid = to_regclass(%s)",
                   [tag_index_name(index.pk)])
    row = cursor.fetchone()
    return None if row is None else bool(row[0])


def _build(index: BankTagIndex) -> bool:
    """Build one tag's index unless it is built or a load into its bank is running; True if it built."""
    concurrently = not connection.in_atomic_block
    with connection.cursor() as cursor:
        state = _index_state(cursor, index)
        if state:
            if index.built_at is None:
                BankTagIndex.objects.filter(bank_id=index.bank_id, pk=index.pk).update(built_at=timezone.now())
            return False
        # Never under a running load (it would keep the index up row by row); the load can start meanwhile
        # and waits for this one build only.
        if not _try_session_lock(cursor, BANK_LOAD_LOCK, index.bank_id):
            return False
        try:
            if state is False:
                cursor.execute(f"DROP INDEX {'CONCURRENTLY ' if concurrently else ''}IF EXISTS "
                               f"{tag_index_name(index.pk)}")
            with index_build_settings(cursor):
                cursor.execute(tag_index_sql(index.pk, index.bank_id, index.dimensions, index.tag,
                                             concurrently=concurrently,
                                             table=bank_partition("banks_memory", index.bank_id)))
        finally:
            _unlock(cursor, BANK_LOAD_LOCK, index.bank_id)
    BankTagIndex.objects.filter(bank_id=index.bank_id, pk=index.pk).update(built_at=timezone.now())
    return True


def bank_tag_indexes_refresh(bank: Bank) -> int | None:
    """Count the bank's tags, choose which to index and build what is missing.

    Returns how many indexes were built (None: another refresh of the bank is running)."""
    dims = bank_embedder(bank).dimensions
    with connection.cursor() as cursor:
        if not _try_session_lock(cursor, TAG_INDEX_LOCK, bank.pk):
            return None
    try:
        live_rows, counts = bank_tag_counts(bank, dims)
        chosen = dict(choose_tags(counts, live_rows, min_rows=tag_index_min_rows(),
                                  per_bank=settings.MEMORYHUB_TAG_INDEXES_PER_BANK))
        for index in BankTagIndex.objects.filter(bank=bank):
            if index.tag not in chosen or index.dimensions != dims:
                _drop(index)
        now = timezone.now()
        for tag, rows in chosen.items():
            BankTagIndex.objects.update_or_create(bank=bank, tag=tag, defaults={"rows": rows, "dimensions": dims},
                                                  create_defaults={"rows": rows, "dimensions": dims, "chosen_at": now})
        BankTextStatistics.objects.filter(bank=bank).update(tags_live_rows=live_rows)
        built = sum(_build(index) for index in BankTagIndex.objects.filter(bank=bank).order_by("-rows", "tag"))
    finally:
        with connection.cursor() as cursor:
            _unlock(cursor, TAG_INDEX_LOCK, bank.pk)
    if built:
        logger.info("bank %s: built %d tag vector indexes (%d chosen)", bank.bank_id, built, len(chosen))
    return built


def bank_tag_indexes_drop(bank_pk: int) -> int:
    """Drop every tag index of the bank (before a big load; when the bank goes); the next periodic pass
    counts its tags again. Returns how many were dropped."""
    indexes = list(BankTagIndex.objects.filter(bank_id=bank_pk))
    for index in indexes:
        _drop(index)
    BankTextStatistics.objects.filter(bank_id=bank_pk).update(tags_live_rows=None)
    return len(indexes)


def _needs_refresh(stats: BankTextStatistics) -> bool:
    if stats.tags_live_rows is None:
        return True
    return abs(stats.live_rows - stats.tags_live_rows) > DRIFT * max(stats.tags_live_rows, 1)


def bank_tag_indexes_refresh_all() -> list[int]:
    """Periodic: refresh the tags of big banks that moved, finish builds a kill left undone, and drop the
    tag indexes of banks no longer big. Returns the primary keys of the banks refreshed."""
    stats = {s.bank_id: s for s in BankTextStatistics.objects.filter(bank__deleted_at__isnull=True)}
    indexed = set(BankTagIndex.objects.values_list("bank_id", flat=True).distinct())
    for pk in indexed - set(stats):
        bank_tag_indexes_drop(pk)
    unbuilt = set(BankTagIndex.objects.filter(built_at__isnull=True).values_list("bank_id", flat=True))
    refreshed: list[int] = []
    for bank in Bank.objects.filter(pk__in=list(stats)).order_by("pk"):
        if (_needs_refresh(stats[bank.pk]) or bank.pk in unbuilt) and bank_tag_indexes_refresh(bank) is not None:
            refreshed.append(bank.pk)
    return refreshed
