"""Semantic recall by reading the rows, where that costs less than walking the graph.

A graph walk that the filters (the bank, a tag, a time range) mostly reject visits about
``limit × graph / kept`` entries before ``limit`` of them pass, each costing a heap visit and a few
dozen distance computations; reading the rows the filters keep costs one heap visit each, and misses
none. On the 1M bank a walked entry cost about WALK_ENTRY_READS read rows: a tag on 2 % of the rows
took 57 ms walked (p95 100 ms, 93 % of the true ten nearest found) and 35 ms read, a tag on 6 %
57 ms walked and 96 ms read. A bank of a dozen memories in a shared graph of a million is read;
a 10,000-memory bank that is most of its graph is walked (reading it cost four times the walk under load).

The estimate of the rows kept is the planner's (``EXPLAIN``, no rows read). A read never goes past
twice ``MEMORYHUB_EXACT_SEARCH_ROWS``: correlated filters can fool the estimate, and such a read stops
and the caller walks.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from banks.models import Bank
from banks.selectors.recall_keyword import bank_text_stats
from banks.selectors.recall_memo import TtlMemo
from banks.vectors import distance_sql, estimated_rows, walk_breadth
from memoryhub.replica import read_connection

# One walked entry costs about this many read rows (measured on the 1M bank, see above).
WALK_ENTRY_READS = 13
_TABLE_ROWS = TtlMemo(300, max_entries=4)


def read_beats_walk(kept: float, graph: float, limit: int, breadth: int) -> bool:
    """Whether reading ``kept`` rows costs less than walking a graph of ``graph`` entries for ``limit`` of them.

    Pure: the walk visits at least ``breadth`` entries (hnsw.ef_search), and about ``limit`` per
    ``kept / graph`` share of entries the filters let through."""
    visits = max(float(breadth), limit * max(graph, kept) / max(kept, 1.0))
    return kept <= WALK_ENTRY_READS * visits


def _table_rows(cursor: Any) -> float:
    """Rows of the memory table (the shared graph holds about as many), from the planner's statistics."""
    cached = _TABLE_ROWS.get("memories")
    if cached is None:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'banks_memory'::regclass")
        cached = max(float(cursor.fetchone()[0]), 0.0)  # -1 before the table's first ANALYZE
        _TABLE_ROWS.set("memories", cached)
    return cached


def exact_nearest(bank: Bank, embedder: Any, vector: str, where: str, params: list[Any],
                  limit: int) -> list[tuple[int, float]] | None:
    """(memory pk, cosine similarity) of the ``limit`` nearest rows passing ``where``, read exactly, or
    None when walking the graph costs less (or the rows turn out to be too many to read)."""
    cap = settings.MEMORYHUB_EXACT_SEARCH_ROWS
    if cap <= 0:
        return None
    with read_connection().cursor() as cursor:
        kept = estimated_rows(cursor, f"SELECT 1 FROM banks_memory m WHERE {where}", params)  # noqa: S608
        if kept > cap:
            return None
        graph = float(bank_text_stats(cursor, bank)[0]) if bank.own_vector_index else _table_rows(cursor)
        if not read_beats_walk(kept, graph, limit, walk_breadth(limit, own=bank.own_vector_index)):
            return None
        distance = distance_sql(embedder.dimensions, column="m.embedding")
        # Vetted: {distance} is distance_sql() (int-cast dimension), {where} the caller's _filters_sql().
        cursor.execute(
            f"SELECT id, similarity, count(*) OVER () FROM (SELECT m.id, 1 - {distance} AS similarity "  # noqa: S608
            f"FROM banks_memory m WHERE {where} AND m.embedding_dims = %s AND m.embedding_model = %s LIMIT %s) s "
            f"ORDER BY similarity DESC NULLS LAST, id DESC LIMIT %s",
            [vector, *params, embedder.dimensions, embedder.name, 2 * cap + 1, limit])
        rows = cursor.fetchall()
    if rows and rows[0][2] > 2 * cap:
        return None
    return [(r[0], float(r[1])) for r in rows]
