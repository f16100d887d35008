"""A big bank's own HNSW index: moving the bank onto it, dropping it before a big load, building it.

Why: maintaining one shared HNSW graph row by row is most of a bulk import's time. A bank that
takes a big import moves to its own partial index instead (``own_vector_index``); its rows are then
COPYed with no HNSW work at all, and the index is built once after the load, by PostgreSQL's
parallel index build. Recall on the bank uses the matching predicate (banks.vectors.vector_scope);
while the index is missing (dropped for the load, or being built) the same query is answered
exactly, so results stay right and the bank's keyword search is never affected.

Builds run ``CONCURRENTLY`` so retains and imports into every bank keep writing meanwhile.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection, transaction

from banks.models import Bank, Memory
from banks.partitions import bank_partition
from banks.providers import bank_embedder
from banks.selectors.recall_exact import index_state_forget
from banks.services.index_builds import index_build_settings
from banks.services.locks import BANK_LOAD_LOCK, VECTOR_INDEX_LOCK, bank_lock_key
from banks.services.memory_rows import rows_vector_tier_adopt
from banks.services.tag_indexes import bank_tag_indexes_drop
from banks.services.vector_fill import bank_vectors_fill
from banks.vectors import bank_index_name, bank_index_sql

logger = logging.getLogger(__name__)

# Session-level advisory locks, one key per bank (banks.services.locks): its index work (two builds never
# race), and its bulk loads (held shared while an import loads; the periodic repair never builds under one).
_LOCK_CLASS = VECTOR_INDEX_LOCK
_LOAD_CLASS = BANK_LOAD_LOCK


@contextmanager
def bank_loading(bank: Bank) -> Iterator[None]:
    """Mark a bulk load into ``bank`` in progress (a session lock: it outlives the load's transactions)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock_shared(%s, %s)", [_LOAD_CLASS, bank_lock_key(bank.pk)])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_shared(%s, %s)", [_LOAD_CLASS, bank_lock_key(bank.pk)])


def bank_vector_index_adopt(bank: Bank) -> bool:
    """Move ``bank`` onto its own vector index (rows stay searchable; exact until the index is built).

    Returns False when it already was. The bank row is locked FOR UPDATE first: an insert into the
    bank holds a key share lock on it (the row trigger), so every row committed before this one
    is flagged below and every later one is flagged by the trigger.
    """
    with transaction.atomic():
        locked = Bank.objects.select_for_update().only("pk", "own_vector_index").get(pk=bank.pk)
        if locked.own_vector_index:
            bank.own_vector_index = True
            return False
        Bank.objects.filter(pk=bank.pk).update(own_vector_index=True)
        rows_vector_tier_adopt(bank.pk)
    bank.own_vector_index = True
    return True


@contextmanager
def _index_work(bank_pk: int, alive: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the bank's index lock (session level) for the block.

    Taken by polling ``pg_try_advisory_lock`` rather than waiting in ``pg_advisory_lock``: a session
    waiting inside a statement holds a snapshot, and ``CREATE INDEX CONCURRENTLY`` (run by whoever holds
    the lock) waits for every older snapshot to go: the waiter and the build would wait on each other
    until PostgreSQL ended one of them with "deadlock detected". ``alive`` runs while waiting (a job's
    heartbeat and cancel check).
    """
    key = bank_lock_key(bank_pk)
    while True:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_CLASS, key])
            if cursor.fetchone()[0]:
                break
        if alive is not None:
            alive()
        time.sleep(0.5)
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_CLASS, key])


def _index_exists(bank_pk: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [bank_index_name(bank_pk)])
        return bool(cursor.fetchone()[0])


def bank_vector_index_drop(bank: Bank) -> None:
    """Drop the bank's own index (before a load big enough that rebuilding beats inserting)."""
    how = "" if connection.in_atomic_block else "CONCURRENTLY "
    # Not while a build of it runs (a DROP waiting on the build's lock and the build waiting on the
    # DROP's snapshot would deadlock).
    with _index_work(bank.pk), connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {how}IF EXISTS {bank_index_name(bank.pk)}")
    index_state_forget(bank.pk)


def bank_vector_index_prepare(bank: Bank, *, incoming: int) -> bool:
    """Before an import of about ``incoming`` memories: should it load without any HNSW upkeep?

    Big imports (``MEMORYHUB_OWN_VECTOR_INDEX_MIN`` or more) move the bank onto its own index; when
    the import is at least as large as what the bank holds, that index is dropped now and rebuilt
    by ``bank_vector_index_build`` afterwards (one parallel build beats as many inserts into the
    graph), and its tags' indexes too (the periodic job builds them again, banks.services.tag_indexes).
    Returns True when the caller must build afterwards.
    """
    if incoming < settings.MEMORYHUB_OWN_VECTOR_INDEX_MIN and not bank.own_vector_index:
        return False
    bank_vector_index_adopt(bank)
    missing = not _index_exists(bank.pk)
    if incoming >= Memory.objects.filter(bank_id=bank.pk).count():
        bank_vector_index_drop(bank)
        bank_tag_indexes_drop(bank.pk)  # kept up row by row they would cost the load what this spares it
        return True
    return missing


def bank_vector_index_build(bank: Bank, alive: Callable[[], None] | None = None) -> bool:
    """Build the bank's own index if it is missing or invalid (a build killed half way); True if it built.

    Uses ``MEMORYHUB_INDEX_BUILD_MEMORY`` and ``MEMORYHUB_INDEX_BUILD_WORKERS`` for this session
    only (banks.services.index_builds).
    """
    bank.refresh_from_db(fields=["own_vector_index", "embedding_provider"])
    if not bank.own_vector_index:
        return False
    dims = bank_embedder(bank).dimensions
    name = bank_index_name(bank.pk)
    concurrently = not connection.in_atomic_block
    with _index_work(bank.pk, alive), connection.cursor() as cursor:
        cursor.execute("SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                       "WHERE i.indexrelid = to_regclass(%s)", [name])
        row = cursor.fetchone()
        if row and row[0] and f"vector({dims})" in row[1]:
            return False
        if row:  # left invalid by an interrupted concurrent build, or for vectors of another size
            cursor.execute(f"DROP INDEX {'CONCURRENTLY ' if concurrently else ''}IF EXISTS {name}")
        with index_build_settings(cursor):
            cursor.execute(bank_index_sql(bank.pk, dims, concurrently=concurrently,
                                          table=bank_partition("banks_memory", bank.pk)))
    logger.info("built vector index %s for bank %s", name, bank.bank_id)
    return True


def bank_vector_indexes_grow() -> list[int]:
    """Periodic: move every bank of the shared graph that grew (by retains, smaller imports) to
    ``MEMORYHUB_OWN_VECTOR_INDEX_ROWS`` live memories onto its own index, built at once, concurrently.

    Such a bank was neither small nor alone in the graph: reading its rows exactly costs four buffer
    visits a row (the vector is stored out of line), and a walk of the shared graph that the bank
    filter mostly rejects visits ``graph / bank`` entries for every row it keeps. Its own graph is walked
    in a few milliseconds. Never during a load into the bank (that load builds when it ends); until the
    build is done the bank's semantic arm is exact, as after an import. Returns the banks moved."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT bank_id FROM banks_memory WHERE NOT own_vector_index AND archived_at IS NULL "
                       "AND forgotten_at IS NULL GROUP BY bank_id HAVING count(*) >= %s",
                       [settings.MEMORYHUB_OWN_VECTOR_INDEX_ROWS])
        grown = [int(row[0]) for row in cursor.fetchall()]
    moved: list[int] = []
    for bank in Bank.objects.filter(pk__in=grown, deleted_at__isnull=True, own_vector_index=False).order_by("pk"):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOAD_CLASS, bank_lock_key(bank.pk)])
            if not cursor.fetchone()[0]:
                continue
        try:
            if bank_vector_index_adopt(bank):
                bank_vector_index_build(bank)
                moved.append(bank.pk)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOAD_CLASS, bank_lock_key(bank.pk)])
    return moved


def bank_vector_index_forget(bank_pk: int) -> None:
    """After a bank is deleted: its index (empty by now) goes too."""
    how = "" if connection.in_atomic_block else "CONCURRENTLY "
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {how}IF EXISTS {bank_index_name(bank_pk)}")


def bank_vector_indexes_missing() -> list[Bank]:
    """Banks on their own vector index with none ready and no load running into them (an import killed
    before its build, never resumed): until it is built their semantic recall is exact, hence slow.
    The periodic job sweep queues a build job for each (banks.services.vector_index_jobs); it builds
    nothing itself."""
    missing = []
    for bank in Bank.objects.filter(own_vector_index=True, deleted_at__isnull=True):
        with connection.cursor() as cursor:
            cursor.execute("SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)",
                           [bank_index_name(bank.pk)])
            row = cursor.fetchone()
            if row and row[0]:
                continue
            # A load running holds its lock shared: it fills and builds when it ends. Only looked at, not held.
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOAD_CLASS, bank_lock_key(bank.pk)])
            if not cursor.fetchone()[0]:
                continue
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOAD_CLASS, bank_lock_key(bank.pk)])
        missing.append(bank)
    return missing


def bank_vector_index_complete(bank: Bank, *, phase: Callable[[str], None],
                               alive: Callable[[], None] | None = None) -> dict[str, int]:
    """Fill in the vectors a killed import left out, then build the bank's index: a job's two steps.

    Holds no load lock: an import resumed meanwhile loads beside it (the fill only writes vectors still
    missing, and the build waits for the index lock without holding a snapshot).
    """
    phase("filling vectors")
    filled = bank_vectors_fill(bank, alive=alive)
    phase("building index")
    built = bank_vector_index_build(bank, alive=alive)
    return {"vectors_filled": filled, "indexes_built": int(built)}
