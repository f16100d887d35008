"""The live memories nearest a vector, and the one a new text would repeat: the reads behind the
near-duplicate check of a retain (every write path: REST, MCP, curation, sync, webhooks), an
auto-ingested fact and consolidation. ``near_duplicate_of`` is the one look they all make."""

from __future__ import annotations

from typing import Any

from banks.duplicate_rule import same_fact
from banks.models import Bank
from banks.vectors import distance_sql, nearest_rows, vector_literal, vector_scope

# How wide a near-duplicate look walks the graph (hnsw.ef_search; the walk goes on past it until
# NEAR_CANDIDATES rows pass the bank's filters, banks.vectors.enable_iterative_scan). It only has to
# find neighbours at the refusal threshold (0.95 by default), which stand far closer than the rest:
# on 1,900 near-copies of memories in banks of 1,000 to 10,000 (MiniLM; shared graph and own index)
# a walk 10 wide found every duplicate the exact read found, at 300-740 buffers a look against
# 640-911 at 40 (docs/scaling.md, "Near-duplicates: the look a retain makes"). Small banks are read
# exactly (the planner's choice: that costs less than a walk the bank filter mostly rejects).
NEAR_LOOK_BREADTH = 10


# How many of the nearest memories a retain weighs: the nearest may be another person's look-alike
# report (see banks.duplicate_rule) while the next one is the same fact.
NEAR_CANDIDATES = 5


def near_duplicate_of(bank: Bank, text: str, vector: list[float], dims: int, *, threshold: float,
                      exclude_pk: int | None = None, model: str | None = None, own_index: bool | None = None,
                      prepared: bool = False) -> tuple[str, float, str] | None:
    """The live memory ``text`` would repeat: the nearest at or above ``threshold`` that also names the same
    names and numbers (banks.duplicate_rule); (memory id, similarity, text), or None. Another person's
    look-alike report is not a duplicate. ``own_index``, ``prepared``: see ``nearest_live_memories``."""
    for candidate in nearest_live_memories(bank, vector, dims, exclude_pk=exclude_pk, model=model,
                                           own_index=own_index, prepared=prepared):
        if candidate[1] < threshold:
            return None
        if same_fact(text, candidate[2]):
            return candidate
    return None


def nearest_live_memories(bank: Bank, vector: list[float], dims: int, *, exclude_pk: int | None = None,
                          own_index: bool | None = None, prepared: bool = False, model: str | None = None,
                          count: int = NEAR_CANDIDATES) -> list[tuple[str, float, str]]:
    """The ``count`` most similar live memories of the bank: (memory id, cosine similarity, text).

    ``own_index``: where the bank's rows are indexed (see ``vector_scope``), as the caller read it
    (default: the bank as loaded). ``prepared`` (see ``nearest_rows``) lets a caller holding a lock
    make this one statement. ``model``: only vectors of that model compare (a bank's rows written by
    another model at the same size, hashing-384 beside MiniLM, are not neighbours of anything)."""
    distance = distance_sql(dims)
    own = bank.own_vector_index if own_index is None else own_index
    # Vetted: {distance} comes from distance_sql() with an int-cast dimension; values are parameters.
    sql = (
        f"SELECT memory_id, 1 - {distance}, text FROM banks_memory "  # noqa: S608
        "WHERE bank_id = %s AND embedding_dims = %s AND archived_at IS NULL AND forgotten_at IS NULL "
        "AND {scope} "
        + ("AND embedding_model = %s " if model else "")
        + ("AND id <> %s " if exclude_pk else "")
        + f"ORDER BY {distance}{{exact}} LIMIT {int(count)}"
    )
    literal = vector_literal(vector)
    params: list[Any] = [literal, bank.pk, dims]
    if model:
        params.append(model)
    if exclude_pk:
        params.append(exclude_pk)
    params.append(literal)
    rows = nearest_rows(sql, lambda: params, limit=count, prepared=prepared, ef=NEAR_LOOK_BREADTH,
                        scope=vector_scope(bank.pk, own=own))
    return [(row[0], float(row[1]), row[2]) for row in rows]
