"""A memory's near-duplicates: its cosine neighbours in the bank above the review threshold.

One approximate nearest-neighbour query on the HNSW index (iterative scan, so the bank filter does
not starve it), with an exact fallback when the index yields nothing. No recall, no ranking fusion:
the number shown is the cosine similarity itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from banks.models import Bank, Memory
from banks.vectors import EXACT_ORDER, distance_sql, vector_literal, vector_scope

# How far below the retain-time dedup threshold a pair still deserves an operator's look.
REVIEW_MARGIN = 0.1
REVIEW_FLOOR = 0.5


@dataclass(frozen=True)
class Neighbour:
    memory_id: str
    text: str
    retained_at: datetime
    similarity: float

    @property
    def percent(self) -> int:
        return int(self.similarity * 100)


def near_duplicate_threshold(bank: Bank) -> float:
    """The similarity from which two memories of ``bank`` are offered for merging.

    A bank may set it (``config["near_duplicate_threshold"]``); otherwise it sits a little below the
    threshold at which a retain is refused as a duplicate, since pairs above that never get stored.
    """
    configured = (bank.config or {}).get("near_duplicate_threshold")
    if isinstance(configured, int | float) and 0 < configured <= 1:
        return float(configured)
    return round(max(REVIEW_FLOOR, bank.dedup_threshold - REVIEW_MARGIN), 4)


def memory_neighbours(memory: Memory, *, threshold: float, limit: int = 5,
                      own: bool | None = None) -> list[Neighbour]:
    """Live memories of the same bank at cosine similarity >= ``threshold``, most similar first.

    ``own``: the bank's ``own_vector_index`` from a Bank the caller loaded (``vector_scope``), saving
    the statement that reads it."""
    if memory.embedding is None or not memory.embedding_dims:
        return []
    dims = int(memory.embedding_dims)
    distance = distance_sql(dims, column="m.embedding")
    literal = vector_literal([float(v) for v in memory.embedding])
    # Vetted: {distance} comes from distance_sql() with an int-cast dimension; values are parameters.
    sql = (f"SELECT m.memory_id, m.text, m.retained_at, 1 - {distance} FROM banks_memory m "  # noqa: S608
           "WHERE m.bank_id = %s AND m.embedding_dims = %s AND m.archived_at IS NULL "
           f"AND m.forgotten_at IS NULL AND {vector_scope(memory.bank_id, 'm', own=own)} AND m.id <> %s "
           f"ORDER BY {distance}{{exact}} LIMIT %s")
    params: list[Any] = [literal, memory.bank_id, dims, memory.pk, literal, limit]
    # One round trip: statements sent together run as one transaction, so the SET LOCALs (keep
    # walking the graph until rows of this bank turn up) hold for the query that follows them.
    settings_sql = f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {max(40, limit)}; "
    with connection.cursor() as cursor:
        cursor.execute(settings_sql + sql.format(exact=""), params)
        while cursor.description is None and cursor.nextset():
            pass
        rows = cursor.fetchall()
        if not rows:
            cursor.execute(sql.format(exact=EXACT_ORDER), params)
            rows = cursor.fetchall()
    found = [Neighbour(memory_id=r[0], text=r[1], retained_at=r[2], similarity=round(float(r[3]), 4)) for r in rows]
    return sorted((n for n in found if n.similarity >= threshold), key=lambda n: -n.similarity)
