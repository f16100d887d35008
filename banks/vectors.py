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

import json
from collections.abc import Callable
from typing import Any

from banks.models.memories import INDEXED_DIMENSIONS

_FORMATS: dict[int, str] = {}


def vector_literal(values: list[float]) -> str:
    """pgvector's text form, 9 significant digits: every single-precision value comes back exactly from
    nine (seven moved most of an exported vector's values by a unit in the last place); an import
    formats millions."""
    if values.count(0) * 2 > len(values):
        # Mostly zeros (a hashing vector): those are written without formatting.
        return "[" + ",".join("0" if v == 0 else f"{v:.9g}" for v in values) + "]"
    # Dense (a model's vector): one %-format for the whole vector costs 60 % of formatting each value.
    template = _FORMATS.get(len(values))
    if template is None:
        template = _FORMATS.setdefault(len(values), "[" + ",".join(["%.9g"] * len(values)) + "]")
    return template % tuple(values)


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


def bank_index_sql(bank_pk: int, dims: int, *, concurrently: bool, table: str = "banks_memory") -> str:
    """A bank's own partial HNSW index; its predicate is what ``vector_scope`` adds for that bank.

    ``table``: the bank's partition on a partitioned install (banks.partitions.bank_partition)."""
    how = "CONCURRENTLY " if concurrently else ""
    return (f"CREATE INDEX {how}IF NOT EXISTS {bank_index_name(bank_pk)} ON {table} USING hnsw "
            f"((embedding::vector({int(dims)})) vector_cosine_ops) "
            f"WHERE bank_id = {int(bank_pk)} AND embedding_dims = {int(dims)} AND own_vector_index")


def vector_scope(bank_pk: int, alias: str = "", *, own: bool | None = None) -> str:
    """The clause that sends a memory vector search of bank ``bank_pk`` to the index holding its rows.

    ``own``: the bank's ``own_vector_index`` as read within the caller's request (a Bank loaded for it,
    or the flag a row's insert returned); without it the flag is read now. A bank never moves back to
    the shared index, so a flag read a moment ago that says ``own`` is still right; one that says
    ``shared`` may be stale by a moment, and ``nearest_rows`` then still answers exactly (its exact
    pass leaves the scope out). The bank id is written as a literal so the partial index matches even
    with server-side binding.
    """
    if own is None:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT own_vector_index FROM banks_bank WHERE id = %s", [bank_pk])
            row = cursor.fetchone()
        own = bool(row and row[0])
    prefix = f"{alias}." if alias else ""
    if own:
        return f"{prefix}bank_id = {int(bank_pk)} AND {prefix}own_vector_index"
    return f"NOT {prefix}own_vector_index"


# Where a bank's vectors are searched (also the recall trace's ``vector_index``).
INDEX_SHARED, INDEX_OWN, INDEX_BUILDING = "shared", "own", "building"


def vector_index_state(bank_pk: int, *, own: bool | None = None) -> str:
    """``shared``, ``own`` (the bank's index is ready) or ``building`` (searches on it are exact meanwhile).

    ``own``: as in ``vector_scope``; a bank on the shared index then costs no statement."""
    from django.db import connection

    if own is False:
        return INDEX_SHARED
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


__all__ = ["INDEX_BUILDING", "INDEX_OWN", "INDEX_SHARED", "INDEXED_DIMENSIONS", "bank_index_name", "bank_index_sql",
           "distance_sql", "ef_search_for", "estimated_rows", "enable_iterative_scan", "hnsw_index_sql", "nearest_rows",
           "prepare_graph_walk", "vector_index_state", "vector_literal", "vector_scope", "vectors_pending",
           "walk_breadth"]


def estimated_rows(cursor, sql: str, params: list[Any]) -> float:  # noqa: ANN001
    """How many rows PostgreSQL's planner expects ``sql`` to return (its statistics; no rows are read)."""
    cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
    plan = cursor.fetchone()[0]
    if isinstance(plan, str):  # json arrives as text on some connections
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])


def ef_search_for(limit: int) -> int:
    return max(40, min(1000, limit))


# A bank's own graph of N rows is walked at most N / OWN_GRAPH_SHARE wide (and at least as wide as asked).
OWN_GRAPH_SHARE = 25


def walk_breadth(limit: int, *, own: bool, graph_rows: float | None = None) -> int:
    """The ``limit`` to walk the graph for (it sets ``hnsw.ef_search``) when a search wants ``limit`` rows.

    A bank on its own index walks MEMORYHUB_OWN_INDEX_EF_SEARCH wide: at a million rows a walk as broad
    as the 50 candidates recall asks for missed a fifth of the true ten nearest (recall@10 0.81 at
    ef_search 50, 0.90 at 100, 0.94 at 200, 0.95-0.96 at 400 depending on the build, 0.96 at 500, 0.97
    at 600; the walk itself took 6, 6, 9, 15 ms at p50 in one run and 9, 12, 15 ms at 400, 500, 600 in
    another; on a 156,000-memory bank of the spread bench 0.948 at 500, 0.956 at 600).

    A smaller own graph (``graph_rows``, banks from MEMORYHUB_OWN_VECTOR_INDEX_MIN up) needs less: at
    most a 25th of its rows. Measured on the tenants bench (40 questions, recall@10 against an exact
    scan, by id): 3,000 rows 0.993 at 100 (1,560 buffers against 3,580 at 600); 6,000 rows 0.995 at 100,
    1.0 at 200 (2,830 against 5,300); 10,000 rows 0.98 at 200, 0.998 at 600 (400: about 5,000 against
    6,200); 20,000 rows 0.993 at 600. Reading those banks exactly cost 4 buffers a row (12,455 at 3,000).
    """
    from django.conf import settings

    if not own:
        return limit
    breadth = settings.MEMORYHUB_OWN_INDEX_EF_SEARCH
    if graph_rows is not None:
        breadth = min(breadth, int(graph_rows) // OWN_GRAPH_SHARE)
    return max(limit, breadth)


def enable_iterative_scan(cursor, limit: int, *, ef: int | None = None) -> None:  # noqa: ANN001
    """Inside a transaction: keep walking the HNSW graph until ``limit`` rows pass the filters.

    The index holds every bank's vectors (and dead rows); without this, the nearest candidates
    may all belong to other banks and a bank-filtered query returns too few rows, or none.
    ``ef``: the walk's breadth when the caller knows better than ``ef_search_for(limit)``.
    """
    # One round trip for both (set_config(..., true) is SET LOCAL).
    cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                   "set_config('hnsw.ef_search', %s, true)", [str(ef or ef_search_for(limit))])


# The ef_search a connection's session walks with, kept on the psycopg connection object (a new
# connection starts without it). Set once per connection instead of per query: that was three round
# trips (BEGIN, SET LOCAL, COMMIT) on every recall and near-duplicate look.
_SESSION_EF = "_memoryhub_hnsw_ef_search"


def _session_ef(connection) -> int | None:  # noqa: ANN001
    raw = connection.connection
    return getattr(raw, _SESSION_EF, None) if raw is not None else None


def _walk_ready(connection, limit: int, breadth: int | None = None) -> bool:  # noqa: ANN001
    """Whether the session already walks the graph iteratively with an ef_search fit for ``limit``
    (or the ``breadth`` asked for): at least what it asks for, and not wastefully more."""
    ef, wanted = _session_ef(connection), breadth or ef_search_for(limit)
    return ef is not None and wanted <= ef <= max(2 * wanted, 100)


def prepare_graph_walk(connection, cursor, limit: int, *, ef: int | None = None) -> None:  # noqa: ANN001
    """Make the next nearest-neighbour query on ``connection`` walk the graph iteratively (see
    ``enable_iterative_scan``), with no statement when its session already does.

    Outside a transaction the settings are made for the session and remembered; inside one they are
    SET LOCAL, since a session-level change made in a transaction that rolls back is undone with it.
    Behind a transaction-pooling proxy (MEMORYHUB_DB_SESSION_SETTINGS off) every query sets them in
    its own transaction, as sessions there are not the client's. ``ef``: as in ``enable_iterative_scan``.
    """
    from django.conf import settings

    if _walk_ready(connection, limit, ef):
        return
    if connection.in_atomic_block or not settings.MEMORYHUB_DB_SESSION_SETTINGS:
        enable_iterative_scan(cursor, limit, ef=ef)
        return
    ef = ef or ef_search_for(limit)
    cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
                   "set_config('hnsw.ef_search', %s, false)", [str(ef)])
    setattr(connection.connection, _SESSION_EF, ef)


def nearest_rows(sql_template: str, params_for: Callable[[], list[Any]], *, limit: int, prepared: bool = False,
                 wanted: int = 1, scope: str = "TRUE", exact_scope: str = "TRUE",
                 ef: int | None = None) -> list[tuple[Any, ...]]:
    """Run a nearest-neighbour query on the HNSW index, and exactly when the index yields too few rows.

    ``sql_template`` has an ``{exact}`` slot after the ORDER BY expression and a ``{scope}`` slot for
    the ``vector_scope()`` clause given as ``scope``; ``params_for()`` gives the parameters. An
    approximate index can come back empty for a bank whose rows sit behind many dead or foreign
    entries in the graph; a bank that has rows then gets an exact answer.

    ``wanted``: how many rows the query's LIMIT asks for. An approximate answer with fewer is checked
    exactly, so a filtered search never returns fewer hits than exist: a selective filter (a rare tag,
    a narrow time range) can leave the graph walk short of them when it gives up (``hnsw.max_scan_tuples``).
    The exact pass leaves the scope out (it only picks an index), so a scope read a moment before the
    bank moved to its own index still finds its rows; ``exact_scope`` is what it puts in its place, for
    a scope that also filters (a tag's graph, banks.vector_tags.tag_scope).

    ``prepared``: the caller's own transaction (on the primary) already ran ``prepare_graph_walk``;
    the query runs there as it is, one statement (two when the index yields too few). ``ef``: the
    walk's breadth, as in ``enable_iterative_scan``.
    """
    from django.conf import settings
    from django.db import connection as primary
    from django.db import transaction

    from memoryhub.replica import read_connection

    if prepared:
        with primary.cursor() as cursor:
            return _nearest_or_exact(cursor, sql_template, params_for, wanted, scope, exact_scope)
    connection = read_connection()
    if connection.in_atomic_block or settings.MEMORYHUB_DB_SESSION_SETTINGS:
        with connection.cursor() as cursor:
            prepare_graph_walk(connection, cursor, limit, ef=ef)
            return _nearest_or_exact(cursor, sql_template, params_for, wanted, scope, exact_scope)
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        enable_iterative_scan(cursor, limit, ef=ef)
        return _nearest_or_exact(cursor, sql_template, params_for, wanted, scope, exact_scope)


# Appended to a nearest-neighbour ORDER BY: the expression then differs from the indexed one, so
# PostgreSQL computes every distance instead of walking the graph (an exact answer).
EXACT_ORDER = " + 0"


def _nearest_or_exact(cursor, sql_template: str, params_for: Callable[[], list[Any]],  # noqa: ANN001
                      wanted: int, scope: str, exact_scope: str) -> list[tuple[Any, ...]]:
    cursor.execute(sql_template.format(exact="", scope=scope), params_for())
    rows = cursor.fetchall()
    if len(rows) < wanted:
        cursor.execute(sql_template.format(exact=EXACT_ORDER, scope=exact_scope), params_for())
        rows = cursor.fetchall()
    return rows
