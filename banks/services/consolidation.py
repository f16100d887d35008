"""Consolidation: group related memories and keep an observation for each group.

Recent live memories that no observation cites yet are clustered by embedding
similarity (nearest neighbours on the HNSW index); each cluster of two or more
becomes an observation whose text the language model writes. A cluster close to
an existing observation strengthens it (new evidence, proof count + 1) instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from banks.models import Bank, Memory, Observation
from banks.providers import get_embedder, get_llm
from banks.selectors.consolidation import consolidation_backlog_rows
from banks.services.observations import observation_create, observation_update
from banks.vectors import distance_sql, nearest_rows, vector_scope

CLUSTER_SIMILARITY = 0.6
MATCH_OBSERVATION_SIMILARITY = 0.8
MAX_CLUSTER = 20


@dataclass
class ConsolidationOutcome:
    created: int = 0
    updated: int = 0
    clusters: int = 0
    memories_scanned: int = 0
    observation_ids: list[str] = field(default_factory=list)


def _neighbours(bank: Bank, memory: Memory, candidates: set[int], similarity: float) -> list[int]:
    dims = memory.embedding_dims or 0
    # The memory's own vector, looked up in its bank's rows.
    distance = distance_sql(dims, column="embedding", param="(SELECT embedding FROM banks_memory WHERE bank_id = %s AND id = %s)")
    # Vetted: {distance} comes from distance_sql() with an int-cast dimension and a fixed subquery; values are parameters.
    sql = (f"SELECT id, 1 - {distance} AS sim FROM banks_memory WHERE bank_id = %s AND embedding_dims = %s "  # noqa: S608
           f"AND archived_at IS NULL AND forgotten_at IS NULL AND {vector_scope(bank.pk)} AND id <> %s "
           f"ORDER BY {distance}{{exact}} LIMIT %s")
    rows = nearest_rows(sql, lambda: [bank.pk, memory.pk, bank.pk, dims, memory.pk, bank.pk, memory.pk, MAX_CLUSTER * 2],
                        limit=MAX_CLUSTER * 2)
    return [pk for pk, sim in rows if sim >= similarity and pk in candidates][:MAX_CLUSTER - 1]


def _matching_observation(bank: Bank, text: str) -> Observation | None:
    embedder = get_embedder(bank.embedding_provider or None)
    from banks.vectors import vector_literal

    vector = vector_literal(embedder.embed([text])[0])
    distance = distance_sql(embedder.dimensions, column="embedding")
    # Vetted: {distance} comes from distance_sql() with an int-cast dimension; values are parameters.
    sql = (f"SELECT id, 1 - {distance} FROM banks_observation WHERE bank_id = %s AND embedding_dims = %s "  # noqa: S608
           f"AND deleted_at IS NULL AND invalidated_at IS NULL ORDER BY {distance}{{exact}} LIMIT 1")
    rows = nearest_rows(sql, lambda: [vector, bank.pk, embedder.dimensions, vector], limit=1)
    row = rows[0] if rows else None
    if row and row[1] >= MATCH_OBSERVATION_SIMILARITY:
        return Observation.objects.get(pk=row[0])
    return None


def observations_consolidate(*, bank: Bank, actor: str, limit: int = 500,
                             progress: Callable[[int, int], None] | None = None) -> ConsolidationOutcome:
    outcome = ConsolidationOutcome()
    # The backlog the consolidation page counts: live memories with a vector no live observation cites.
    memories = list(consolidation_backlog_rows(bank).order_by("-retained_at")[:limit])
    outcome.memories_scanned = len(memories)
    by_pk = {m.pk: m for m in memories}
    unassigned = set(by_pk)
    llm = get_llm()
    for i, memory in enumerate(memories):
        if progress and i % 25 == 0:
            progress(i, len(memories))
        if memory.pk not in unassigned:
            continue
        members = [memory.pk, *_neighbours(bank, memory, unassigned - {memory.pk}, CLUSTER_SIMILARITY)]
        if len(members) < 2:
            continue
        unassigned.difference_update(members)
        cluster = [by_pk[pk] for pk in members]
        outcome.clusters += 1
        text = llm.summarize([m.text for m in cluster]).splitlines()[0].lstrip("- ").strip() or cluster[0].text
        ids = [m.memory_id for m in cluster]
        tags = Counter(t for m in cluster for t in set(m.tags))
        common = [t for t, n in tags.items() if n == len(cluster)]
        scope = f"tag:{sorted(common)[0]}" if common else "bank"
        existing = _matching_observation(bank, text)
        if existing is not None:
            observation_update(observation=existing, actor=actor, add_source_ids=ids, reason="consolidation")
            outcome.updated += 1
            outcome.observation_ids.append(existing.observation_id)
        else:
            created = observation_create(bank=bank, text=text, actor=actor, source_ids=ids, scope=scope,
                                         confidence=0.7)
            outcome.created += 1
            outcome.observation_ids.append(created.observation_id)
    if progress:
        progress(len(memories), len(memories))
    return outcome
