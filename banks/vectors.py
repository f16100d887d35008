"""SQL fragments for the untyped ``embedding`` column.

The column holds vectors of any size; each common size has a partial HNSW
index on ``embedding::vector(N)``. A query must use the very same cast for
PostgreSQL to pick that index, so every distance expression is built here.

Two kinds of HNSW index hold memories: the shared ones (``memory_hnsw_<N>``, every bank's rows
but those flagged ``own_vector_index``) and a big bank's own (``memory_hnsw_bank_<pk>``, built
after a bulk load, see banks.services.vector_indexes). A nearest-neighbour query on memories adds
``vector_scope()`` so its WHERE clause implies exactly one of those predicates. While a bank's
own index is being built no index matches, and PostgreSQL answers exactly (slower, never wrong).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from banks.models.memories import INDEXED_DIMENSIONS


def vector_literal(values: list[float]) -> str:
    return "[" + ",".join(f"{v:.7g}" for v in values) + "]"


def distance_sql(dims: int, column: str = "embedding", param: str = "%s") -> str:
    """Cosine distance between ``column`` and a query vector parameter, index-friendly."""
    return f"({column}::vector({int(dims)}) <=> {param}::vector({int(dims)}))"


def hnsw_index_sql(table: str, dims: int, name: str) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw "
        f"((embedding::vector({dims})) vector_cosine_ops) WHERE embedding_dims = {dims}"
    )


def bank_index_name(bank_pk: int) -> str:
    return f"memory_hnsw_bank_{int(bank_pk)}"


def bank_index_sql(bank_pk: int, dims: int, *, concurrently: bool) -> str:
    """A bank's own partial HNSW index; its predicate is what ``vector_scope`` adds for that bank."""
    how = "CONCURRENTLY " if concurrently else ""
    return (f"CREATE INDEX {how}IF NOT EXISTS {bank_index_name(bank_pk)} ON banks_memory USING hnsw "
            f"((embedding::vector({int(dims)})) vector_cosine_ops) "
            f"WHERE bank_id = {int(bank_pk)} AND embedding_dims = {int(dims)} AND own_vector_index")


def vector_scope(bank_pk: int, alias: str = "") -> str:
    """The clause that sends a memory vector search of bank ``bank_pk`` to the index holding its rows.

    Read fresh each time (not from a Bank object loaded earlier): a bank can move to its own index
    while a long-lived object still says otherwise, and the wrong clause would find none of its rows.
    The bank id is written as a literal so the partial index matches even with server-side binding.
    """
    from django.db import connection

    prefix = f"{alias}." if alias else ""
    with connection.cursor() as cursor:
        cursor.execute("SELECT own_vector_index FROM banks_bank WHERE id = %s", [bank_pk])
        row = cursor.fetchone()
    if row and row[0]:
        return f"{prefix}bank_id = {int(bank_pk)} AND {prefix}own_vector_index"
    return f"NOT {prefix}own_vector_index"


# Where a bank's vectors are searched (also the recall trace's ``vector_index``).
INDEX_SHARED, INDEX_OWN, INDEX_BUILDING = "shared", "own", "building"


def vector_index_state(bank_pk: int) -> str:
    """``shared``, ``own`` (the bank's index is ready) or ``building`` (searches on it are exact meanwhile)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT b.own_vector_index, i.indisvalid AND i.indisready FROM banks_bank b "
                       "LEFT JOIN pg_index i ON i.indexrelid = to_regclass(%s) WHERE b.id = %s",
                       [bank_index_name(bank_pk), bank_pk])
        row = cursor.fetchone()
    if not row or not row[0]:
        return INDEX_SHARED
    return INDEX_OWN if row[1] else INDEX_BUILDING


def vectors_pending(bank_pk: int) -> int:
    """Live memories of the bank still waiting for their vector after a big import (banks.services.vector_fill),
    counted on the partial index memory_pending_vectors."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM banks_memory WHERE bank_id = %s AND embedding_dims IS NULL "
                       "AND forgotten_at IS NULL AND archived_at IS NULL", [bank_pk])
        return int(cursor.fetchone()[0])


__all__ = ["INDEX_BUILDING", "INDEX_OWN", "INDEX_SHARED", "INDEXED_DIMENSIONS", "bank_index_name", "bank_index_sql", "distance_sql", "hnsw_index_sql",
           "vector_index_state", "vector_literal", "vector_scope", "vectors_pending"]


def enable_iterative_scan(cursor, limit: int) -> None:  # noqa: ANN001
    """Inside a transaction: keep walking the HNSW graph until ``limit`` rows pass the filters.

    The index holds every bank's vectors (and dead rows); without this, the nearest candidates
    may all belong to other banks and a bank-filtered query returns too few rows, or none.
    """
    # One round trip for both (set_config(..., true) is SET LOCAL).
    cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                   "set_config('hnsw.ef_search', %s, true)", [str(max(40, min(1000, limit)))])


def nearest_rows(sql_template: str, params_for: Callable[[], list[Any]], *, limit: int, prepared: bool = False,
                 wanted: int = 1) -> list[tuple[Any, ...]]:
    """Run a nearest-neighbour query on the HNSW index, and exactly when the index yields nothing.

    ``sql_template`` has an ``{order}`` slot for the ORDER BY expression and ``params_for(order_sql)``
    gives the parameters. An approximate index can come back empty for a bank whose rows sit behind
    many dead or foreign entries in the graph; a bank that has rows then gets an exact answer.

    ``wanted``: how many rows the query's LIMIT asks for. An approximate answer with fewer is checked
    exactly, so a filtered search never returns fewer hits than exist: a selective filter (a rare tag,
    a narrow time range) can leave the graph walk short of them when it gives up (``hnsw.max_scan_tuples``).

    ``prepared``: the caller's own transaction (on the primary) already ran ``enable_iterative_scan``;
    the query runs there as it is, one statement (two when the index yields too few).
    """
    from django.db import connection as primary
    from django.db import transaction

    from memoryhub.replica import read_connection

    if prepared:
        with primary.cursor() as cursor:
            return _nearest_or_exact(cursor, sql_template, params_for, wanted)
    connection = read_connection()
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        enable_iterative_scan(cursor, limit)
        return _nearest_or_exact(cursor, sql_template, params_for, wanted)


def _nearest_or_exact(cursor, sql_template: str, params_for: Callable[[], list[Any]],  # noqa: ANN001
                      wanted: int) -> list[tuple[Any, ...]]:
    cursor.execute(sql_template.format(exact=""), params_for())
    rows = cursor.fetchall()
    if len(rows) < wanted:
        # "+ 0" makes the expression differ from the indexed one, so PostgreSQL computes it exactly.
        cursor.execute(sql_template.format(exact=" + 0"), params_for())
        rows = cursor.fetchall()
    return rows
