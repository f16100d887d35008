"""Semantic recall by reading the rows, where that costs less than walking the graph.

A graph walk that the filters (the bank, a tag, a time range) mostly reject visits about
``limit × graph / kept`` entries before ``limit`` of them pass, each costing a heap visit and a few
dozen distance computations; reading the rows the filters keep costs one heap visit each, and misses
none. On the 1M bank a walked entry cost about WALK_ENTRY_READS read rows: a tag on 2 % of the rows
took 57 ms walked (p95 100 ms, 93 % of the true ten nearest found) and 35 ms read, a tag on 6 %
57 ms walked and 96 ms read. A bank of a dozen memories in a shared graph of a million is read;
a 10,000-memory bank that is most of its graph is walked (reading it cost four times the walk under load).

A search filtered on one tag that has a graph of its own (banks.models.tag_indexes) weighs the walk of
that graph instead: it is about as big as what the filter keeps, so the walk wastes little.

Where the walk is chosen, a walk that the filters mostly reject gathers more rows than it needs
(``walk_rows``): the first rows such a walk finds are not all the nearest.

The estimate of the rows kept is the planner's (``EXPLAIN``, no rows read). A read never goes past
twice ``MEMORYHUB_EXACT_SEARCH_ROWS``: correlated filters can fool the estimate, and such a read stops
and the caller walks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from banks.models import Bank
from banks.selectors.recall_keyword import bank_text_stats
from banks.selectors.recall_memo import TtlMemo
from banks.vector_tags import TAG_INDEX_PREFIX, tag_scope
from banks.vectors import (
    INDEX_OWN,
    INDEX_SHARED,
    distance_sql,
    estimated_rows,
    vector_index_state,
    walk_breadth,
)
from memoryhub.replica import read_connection

# One walked entry costs about this many read rows (measured on the 1M bank, see above).
WALK_ENTRY_READS = 13
# A walk of the shared graph that the filters mostly reject gathers this many times the rows it needs.
WALK_OVERFETCH = 2
_SHARED_ROWS = TtlMemo(300, max_entries=4)
_BANK_ROWS = TtlMemo(60, max_entries=10_000)
_TAG_GRAPHS = TtlMemo(60, max_entries=10_000)
# Banks whose own index was found ready, for the recall trace (see index_state).
_OWN_READY = TtlMemo(60, max_entries=10_000)


def index_state(bank: Bank) -> str:
    """Where the bank's vectors are searched, as the recall trace reports it (banks.vectors.vector_index_state).

    A bank's own index found ready is taken as still ready for 60 s: a statement on every recall of a
    big bank otherwise (0.2 ms of the database's CPU), for a figure only the trace shows. Searches
    do not depend on it: without the index PostgreSQL reads the bank's rows exactly. ``building`` is
    read each time, so the trace shows when the build ends."""
    if not bank.own_vector_index:
        return INDEX_SHARED
    if _OWN_READY.get(bank.pk) is not None:
        return INDEX_OWN
    state = vector_index_state(bank.pk, own=True)
    if state == INDEX_OWN:
        _OWN_READY.set(bank.pk, True)
    return state


def index_state_forget(bank_pk: int) -> None:
    """The bank's own index is going away (in this process; others see it within 60 s)."""
    _OWN_READY.forget(bank_pk)


def read_beats_walk(kept: float, graph: float, limit: int, breadth: int) -> bool:
    """Whether reading ``kept`` rows costs less than walking a graph of ``graph`` entries for ``limit`` of them.

    Pure: the walk visits at least ``breadth`` entries (hnsw.ef_search), and about ``limit`` per
    ``kept / graph`` share of entries the filters let through."""
    visits = max(float(breadth), limit * max(graph, kept) / max(kept, 1.0))
    return kept <= WALK_ENTRY_READS * visits


def _shared_graph_rows(cursor: Any) -> float:
    """Rows in the shared graph (every bank's but those on an index of their own), by the planner's statistics."""
    cached = _SHARED_ROWS.get("memories")
    if cached is None:
        cached = estimated_rows(cursor, "SELECT 1 FROM banks_memory WHERE NOT own_vector_index", [])
        _SHARED_ROWS.set("memories", cached)
    return cached


def walk_rows(kept: float, graph: float, limit: int) -> int:
    """How many rows a walk should gather for the nearest ``limit``. Pure.

    A walk stops at the first rows that pass the filters, and where they reject most of a graph's
    entries those are not all the nearest: for an 18,000-memory bank in a shared graph of 100,000, the
    true ten nearest were 94 % of the ten best of 50 rows gathered, 97 % of 100 and 99 % of 200 (8, 12
    and 23 ms); for a time filter keeping 8 % of a 156,000-memory bank on its own graph (walked 500
    wide), 94.6 % of 50 and 96.8 % of 100 (14 and 26 ms). A walk that the filters mostly reject gathers
    twice the rows."""
    return limit * WALK_OVERFETCH if kept < graph / 2 else limit


@dataclass(frozen=True)
class SemanticPlan:
    """How the semantic arm answers: ``rows`` read exactly, or (None) a walk gathering ``walk_rows``;
    ``tag_scope``: walk the graph of the filter's one tag (its clause, banks.vector_tags.tag_scope)."""

    rows: list[tuple[int, float]] | None
    walk_rows: int
    tag_scope: str | None = None
    # The rows of the graph walked when it is the bank's own or a tag's (sizes the walk, banks.vectors.walk_breadth).
    graph_rows: float | None = None


def _tag_graph_rows(cursor: Any, bank: Bank, dims: int, tag: str) -> int | None:
    """The rows of ``tag``'s own graph in the bank when its index is built and valid (else None).

    The bank's built tag indexes are kept a minute: one is used only once the index is valid, and
    one dropped meanwhile only leaves the walk's query without an index (answered exactly)."""
    graphs = _TAG_GRAPHS.get((bank.pk, dims))
    if graphs is None:
        cursor.execute("SELECT t.tag, t.rows FROM banks_banktagindex t JOIN pg_index i "
                       "ON i.indexrelid = to_regclass(%s || t.id) "
                       "WHERE t.bank_id = %s AND t.dimensions = %s AND i.indisvalid AND i.indisready",
                       [TAG_INDEX_PREFIX, bank.pk, dims])
        graphs = {str(t): int(n) for t, n in cursor.fetchall()}
        _TAG_GRAPHS.set((bank.pk, dims), graphs)
    return graphs.get(tag)


def semantic_plan(bank: Bank, embedder: Any, vector: str, where: str, params: list[Any], limit: int,
                  *, narrowed: bool, tags: tuple[str, ...] = ()) -> SemanticPlan:
    """Read the ``limit`` nearest rows passing ``where`` when that costs less than the walk (or say how to
    walk). ``narrowed``: filters beyond the bank; a bank on its own graph without them just walks.
    ``tags``: the filter's tags; one that has a graph of its own is walked there."""
    if bank.own_vector_index and not narrowed:
        with read_connection().cursor() as cursor:
            return SemanticPlan(None, limit, graph_rows=float(bank_text_stats(cursor, bank)[0]))
    cap = settings.MEMORYHUB_EXACT_SEARCH_ROWS
    with read_connection().cursor() as cursor:
        # The planner's figure for the bank alone changes only when it analyzes the table: kept a minute.
        kept = None if narrowed else _BANK_ROWS.get(bank.pk)
        if kept is None:
            kept = estimated_rows(cursor, f"SELECT 1 FROM banks_memory m WHERE {where}", params)  # noqa: S608
            if not narrowed:
                _BANK_ROWS.set(bank.pk, kept)
        # Only a search that keeps a good part of a tag index's least rows can gain by walking one.
        tag_rows = _tag_graph_rows(cursor, bank, embedder.dimensions, tags[0]) \
            if len(tags) == 1 and kept >= settings.MEMORYHUB_TAG_INDEX_MIN / 4 else None
        own = bank.own_vector_index or tag_rows is not None
        if tag_rows is not None:
            graph = float(tag_rows)
        else:
            graph = float(bank_text_stats(cursor, bank)[0]) if bank.own_vector_index else _shared_graph_rows(cursor)
        walk = SemanticPlan(None, walk_rows(kept, graph, limit),
                            tag_scope(bank.pk, embedder.dimensions, tags[0], "m") if tag_rows is not None else None,
                            graph_rows=graph if own else None)
        if kept > cap or not read_beats_walk(kept, graph, limit, walk_breadth(limit, own=own, graph_rows=walk.graph_rows)):
            return walk
        distance = distance_sql(embedder.dimensions, column="m.embedding")
        # Vetted: {distance} is distance_sql() (int-cast dimension), {where} the caller's _filters_sql().
        cursor.execute(
            f"SELECT id, similarity, count(*) OVER () FROM (SELECT m.id, 1 - {distance} AS similarity "  # noqa: S608
            f"FROM banks_memory m WHERE {where} AND m.embedding_dims = %s AND m.embedding_model = %s LIMIT %s) s "
            f"ORDER BY similarity DESC NULLS LAST, id DESC LIMIT %s",
            [vector, *params, embedder.dimensions, embedder.name, 2 * cap + 1, limit])
        rows = cursor.fetchall()
    if rows and rows[0][2] > 2 * cap:
        return walk
    return SemanticPlan([(r[0], float(r[1])) for r in rows], limit)
