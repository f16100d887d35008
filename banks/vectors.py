"""SQL fragments for the untyped ``embedding`` column.

The column holds vectors of any size; each common size has a partial HNSW
index on ``embedding::vector(N)``. A query must use the very same cast for
PostgreSQL to pick that index, so every distance expression is built here.
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


__all__ = ["INDEXED_DIMENSIONS", "distance_sql", "hnsw_index_sql", "vector_literal"]


def enable_iterative_scan(cursor, limit: int) -> None:  # noqa: ANN001
    """Inside a transaction: keep walking the HNSW graph until ``limit`` rows pass the filters.

    The index holds every bank's vectors (and dead rows); without this, the nearest candidates
    may all belong to other banks and a bank-filtered query returns too few rows, or none.
    """
    cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(40, min(1000, limit))])


def nearest_rows(sql_template: str, params_for: Callable[[], list[Any]], *, limit: int) -> list[tuple[Any, ...]]:
    """Run a nearest-neighbour query on the HNSW index, and exactly when the index yields nothing.

    ``sql_template`` has an ``{order}`` slot for the ORDER BY expression and ``params_for(order_sql)``
    gives the parameters. An approximate index can come back empty for a bank whose rows sit behind
    many dead or foreign entries in the graph; a bank that has rows then gets an exact answer.
    """
    from django.db import transaction

    from memoryhub.replica import read_connection

    connection = read_connection()
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        enable_iterative_scan(cursor, limit)
        cursor.execute(sql_template.format(exact=""), params_for())
        rows = cursor.fetchall()
        if not rows:
            # "+ 0" makes the expression differ from the indexed one, so PostgreSQL computes it exactly.
            cursor.execute(sql_template.format(exact=" + 0"), params_for())
            rows = cursor.fetchall()
    return rows
