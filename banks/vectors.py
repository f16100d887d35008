"""SQL fragments for the untyped ``embedding`` column.

The column holds vectors of any size; each common size has a partial HNSW
index on ``embedding::vector(N)``. A query must use the very same cast for
PostgreSQL to pick that index, so every distance expression is built here.
"""

from __future__ import annotations

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
