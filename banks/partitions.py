"""Which partition of a bank table holds one bank's rows, on an install partitioned by ``bank_id``
(``MEMORYHUB_BANK_PARTITIONS``, banks migration 0034; docs/scaling.md "The partitioned install").

An index of one bank's rows (its own HNSW graph, its big tags' graphs) is built ``CONCURRENTLY``, which
PostgreSQL does not allow on a partitioned table: it is built on the bank's partition instead, where the
planner finds it once the query's ``bank_id = <literal>`` has pruned the other partitions. The partition is
asked of the catalogue (each partition's hash bound, tested with ``satisfies_hash_partition``), so it holds
whatever the number of partitions, before the bank has any row.
"""

from __future__ import annotations

from django.db import connection


def bank_partition(table: str, bank_pk: int) -> str:
    """The partition of ``table`` that holds bank ``bank_pk``'s rows; ``table`` itself when unpartitioned."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.oid::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), "
            r"'modulus (\d+), remainder (\d+)') AS b "
            "WHERE i.inhparent = %s::regclass "
            "AND satisfies_hash_partition(%s::regclass::oid, b[1]::int, b[2]::int, %s::bigint)",
            [table, table, int(bank_pk)])
        row = cursor.fetchone()
    return str(row[0]) if row else table
