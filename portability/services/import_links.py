"""Archive links between memories, stored batch by batch.

A batch queues its records' links as ``PendingLink`` rows inside its own
transaction, then every pending link of the bank that touches the batch and now
has both ends becomes a ``MemoryLink``. A link whose other end comes later (a
later batch, or a re-run after a kill) stays pending until it arrives, so no link
is lost and none is held in memory between batches.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from banks.models import Bank, MemoryLink
from portability.models import PendingLink
from portability.records import MemoryRecord


def links_queue(bank: Bank, records: Iterable[MemoryRecord]) -> None:
    rows = [PendingLink(bank=bank, source_memory_id=record.memory_id or "", target_memory_id=link.target_id[:255],
                        link_type=link.link_type[:64], confidence=link.confidence, metadata=link.metadata or {})
            for record in records for link in record.links]
    if rows:
        PendingLink.objects.bulk_create(rows, ignore_conflicts=True)


def links_resolve(bank: Bank, memory_ids: Iterable[str]) -> int:
    """Turn the bank's pending links touching ``memory_ids`` into memory links when both ends exist."""
    ids = list(set(memory_ids))
    if not ids:
        return 0
    # The ids go as array parameters: thousand-item IN lists cost more Python to bind than to run.
    pending = list(PendingLink.objects.raw(
        "SELECT * FROM portability_pendinglink WHERE bank_id = %s "
        "AND (source_memory_id = ANY(%s::varchar[]) OR target_memory_id = ANY(%s::varchar[]))", [bank.pk, ids, ids]))
    if not pending:
        return 0
    ends = list({p.source_memory_id for p in pending} | {p.target_memory_id for p in pending})
    with connection.cursor() as cursor:
        cursor.execute("SELECT memory_id, id FROM banks_memory WHERE bank_id = %s AND memory_id = ANY(%s::varchar[])",
                       [bank.pk, ends])
        pks = dict(cursor.fetchall())
    ready = [p for p in pending if p.source_memory_id in pks and p.target_memory_id in pks]
    created = MemoryLink.objects.bulk_create(
        [MemoryLink(bank=bank, source_id=pks[p.source_memory_id], target_id=pks[p.target_memory_id],
                    link_type=p.link_type, confidence=p.confidence, metadata=p.metadata) for p in ready],
        ignore_conflicts=True)
    PendingLink.objects.filter(bank=bank, pk__in=[p.pk for p in ready]).delete()
    return len(created)


def links_unresolved(bank: Bank) -> int:
    return PendingLink.objects.filter(bank=bank).count()
