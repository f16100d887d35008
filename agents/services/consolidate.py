"""memory_reflect: an on-demand consolidation pass over a bank, one at a time per bank.

Prune (archive memories with nothing left to say), merge near-duplicates (cosine above
the bank's dedup threshold), derive observations from clusters through the language
model, report counts and duration. A second call while one runs returns zeros at once.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from banks.access import Principal, authorize
from banks.models import Bank, Memory
from banks.selectors.near_duplicates import near_duplicate_of
from banks.services.audit import audit_record
from banks.services.consolidation import observations_consolidate
from banks.services.memory_archiving import memories_archive
from banks.services.merge import memory_merge

MIN_MEANINGFUL_CHARS = 3
MAX_SCANNED = 2000


@contextmanager
def bank_lock(bank: Bank) -> Iterator[bool]:
    """A PostgreSQL advisory lock per bank: works across processes and machines."""
    key = zlib.crc32(f"memoryhub:reflect:{bank.bank_id}".encode())
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        acquired = bool(cursor.fetchone()[0])
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


def agent_memory_reflect(*, bank: Bank, actor: str, topic: str | None = None,
                         by: Principal | None = None) -> dict[str, int]:
    authorize(by, bank.bank_id, "write")
    started = time.perf_counter()
    counts = {"pruned": 0, "merged": 0, "derived": 0, "compacted": 0}
    with bank_lock(bank) as acquired:
        if not acquired:
            return {**counts, "durationMs": 0, "skipped": 1}
        live = Memory.objects.live().filter(bank=bank)
        empty = [m.memory_id for m in live.only("memory_id", "text")[:MAX_SCANNED]
                 if len(m.text.strip()) < MIN_MEANINGFUL_CHARS]
        counts["pruned"] = len(memories_archive(bank=bank, memory_ids=empty, actor=actor,
                                                reason="consolidation: nothing left to say"))
        merged_away: set[int] = set()
        for memory in live.filter(embedding_dims__isnull=False).order_by("retained_at")[:MAX_SCANNED]:
            if memory.pk in merged_away or memory.embedding is None:
                continue
            # Similar is not enough: another person's look-alike fact is never merged (banks.duplicate_rule).
            nearest = near_duplicate_of(bank, memory.text, [float(x) for x in memory.embedding],
                                        memory.embedding_dims or 0, threshold=bank.dedup_threshold,
                                        exclude_pk=memory.pk, model=memory.embedding_model or None)
            if nearest:
                other = Memory.objects.live().filter(bank=bank, memory_id=nearest[0]).first()
                if other is None or other.pk in merged_away:
                    continue
                memory_merge(bank=bank, memory_ids=[memory.memory_id, other.memory_id], actor=actor,
                             reason="consolidation: near-duplicates", by=by)
                merged_away.add(other.pk)
                counts["merged"] += 1
        outcome = observations_consolidate(bank=bank, actor=actor)
        counts["derived"] = outcome.created
        counts["compacted"] = outcome.updated
    duration = int((time.perf_counter() - started) * 1000)
    audit_record(actor=actor, action="bank.reflect", bank=bank, details={**counts, "duration_ms": duration})
    return {**counts, "durationMs": duration}
