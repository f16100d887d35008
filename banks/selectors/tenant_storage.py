"""Storage used by a tenant (its ``<tenant_id>:`` banks), for Astrocyte's billing snapshot route.

Astrocyte gives each tenant a schema and measures it; MemoryHub's tenants share tables, so the heap
bytes are the tenant's own rows measured one by one (``pg_column_size``), and the index bytes are
each table's index size apportioned by the tenant's share of its rows, which the answer says in
``warnings``. Measured on request, so ``snapshot_age_seconds`` is 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection
from django.db.models import Max
from django.utils import timezone

from banks.models import Bank, Entity, Memory, MentalModel, Observation

# The tables a tenant's data lives in, each with its bank column.
TABLES = (Memory, Entity, MentalModel, Observation)


@dataclass
class TenantStorage:
    tenant_id: str
    bytes_used: int
    heap_bytes: int
    index_bytes: int
    table_count: int
    memory_count: int
    last_write_at: datetime | None
    measured_at: datetime
    warnings: list[str] = field(default_factory=list)


def _measure(table: str, bank_pks: list[int]) -> tuple[int, int]:
    """(heap bytes of the tenant's rows, index bytes apportioned to them)."""
    quoted = connection.ops.quote_name(table)
    # S608 vetted: the table name comes from a model's db_table, quoted; values are parameters.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*), COALESCE(SUM(pg_column_size(t.*)), 0) FROM {quoted} t "  # noqa: S608
                       "WHERE t.bank_id = ANY(%s)", [bank_pks])
        rows, heap = cursor.fetchone()
        # A partitioned table (MEMORYHUB_BANK_PARTITIONS) stores nothing itself: its partitions are summed.
        cursor.execute("WITH leaf AS (SELECT relid FROM pg_partition_tree(%s::regclass) WHERE isleaf "
                       "UNION ALL SELECT %s::regclass WHERE NOT EXISTS (SELECT FROM pg_partition_tree(%s::regclass))) "
                       "SELECT coalesce(sum(pg_indexes_size(c.oid)), 0)::bigint, coalesce(sum(GREATEST(c.reltuples, 0)), 0)::float8 "
                       "FROM leaf JOIN pg_class c ON c.oid = leaf.relid", [table, table, table])
        index_size, estimate = cursor.fetchone()
    total = max(float(estimate), float(rows), 1.0)
    return int(heap), int(index_size * rows / total) if rows else 0


def tenant_storage(tenant_id: str, banks: list[Bank]) -> TenantStorage:
    pks = [b.pk for b in banks]
    heap = index = 0
    for model in TABLES:
        h, i = _measure(model._meta.db_table, pks)
        heap, index = heap + h, index + i
    memories = Memory.objects.filter(bank__in=pks)
    return TenantStorage(
        tenant_id=tenant_id, bytes_used=heap + index, heap_bytes=heap, index_bytes=index, table_count=len(TABLES),
        memory_count=memories.filter(forgotten_at__isnull=True).count(),
        last_write_at=memories.aggregate(t=Max("updated_at"))["t"], measured_at=timezone.now(),
        warnings=["tables are shared between tenants: index bytes are apportioned by row share"],
    )


__all__ = ["TenantStorage", "tenant_storage"]
