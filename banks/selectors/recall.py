"""Hybrid recall inside PostgreSQL.

Arms: ``semantic`` (pgvector cosine on the HNSW index, iterative scans so
filters do not starve results), ``keyword`` (full-text rank on the GIN index)
and ``graph`` (memories linked to entities named in the query). Their ranked
lists are fused with reciprocal-rank fusion (k = 60). Directives and
observations can be layered on top by the live-memory selectors.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection

from banks.content import estimate_tokens
from banks.models import Bank, Memory
from banks.providers import get_llm
from banks.services.memories import bank_embedder
from banks.vectors import distance_sql, nearest_rows, vector_literal

RRF_K = 60
# Each arm over-fetches this many candidates per requested result (as Astrocyte does).
OVERFETCH = 5
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class RecallFilters:
    tags: list[str] | None = None
    fact_types: list[str] | None = None
    time_range: tuple[datetime | None, datetime | None] | None = None
    as_of: datetime | None = None
    layers: list[str] | None = None
    sources: list[str] | None = None


@dataclass
class RecallHit:
    memory_id: str
    text: str
    score: float
    bank_id: str
    fact_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    occurred_at: datetime | None = None
    retained_at: datetime | None = None
    source: str | None = None
    memory_layer: str | None = None
    layer: str = "fact"
    strategies: list[str] = field(default_factory=list)


@dataclass
class RecallTrace:
    strategies_used: list[str] = field(default_factory=list)
    total_candidates: int = 0
    fusion_method: str = "rrf"
    latency_ms: float = 0.0
    strategy_timings_ms: dict[str, float] = field(default_factory=dict)
    strategy_candidate_counts: dict[str, int] = field(default_factory=dict)
    tier_used: int | None = None
    layer_distribution: dict[str, int] = field(default_factory=dict)
    cache_hit: bool | None = None
    wiki_tier_used: bool | None = None


@dataclass
class RecallOutcome:
    hits: list[RecallHit]
    total_available: int
    truncated: bool
    trace: RecallTrace
    top_semantic_score: float | None = None


def _filters_sql(bank: Bank, filters: RecallFilters, alias: str = "m") -> tuple[str, list[Any]]:
    clauses = [f"{alias}.bank_id = %s"]
    params: list[Any] = [bank.pk]
    if filters.as_of is not None:
        # History: what was stored by then and not yet forgotten or archived at that moment.
        clauses.append(f"{alias}.retained_at <= %s AND ({alias}.forgotten_at IS NULL OR {alias}.forgotten_at > %s) "
                       f"AND ({alias}.archived_at IS NULL OR {alias}.archived_at > %s)")
        params += [filters.as_of] * 3
    else:
        clauses.append(f"{alias}.archived_at IS NULL AND {alias}.forgotten_at IS NULL")
    if filters.tags:
        clauses.append(f"{alias}.tags && %s::varchar[]")
        params.append(list(filters.tags))
    if filters.fact_types:
        clauses.append(f"{alias}.fact_type = ANY(%s)")
        params.append(list(filters.fact_types))
    if filters.layers:
        clauses.append(f"COALESCE({alias}.memory_layer, 'fact') = ANY(%s)")
        params.append(list(filters.layers))
    if filters.sources:
        clauses.append(f"{alias}.source = ANY(%s)")
        params.append(list(filters.sources))
    if filters.time_range:
        start, end = filters.time_range
        when = f"COALESCE({alias}.occurred_at, {alias}.created_at)"
        if start is not None:
            clauses.append(f"{when} >= %s")
            params.append(start)
        if end is not None:
            clauses.append(f"{when} <= %s")
            params.append(end)
    return " AND ".join(clauses), params


def _semantic(bank: Bank, query: str, filters: RecallFilters, limit: int) -> list[tuple[int, float]]:
    embedder = bank_embedder(bank)
    vector = vector_literal(embedder.embed([query])[0])
    where, params = _filters_sql(bank, filters)
    distance = distance_sql(embedder.dimensions, column="m.embedding")
    sql = (f"SELECT m.id, 1 - {distance} FROM banks_memory m WHERE {where} AND m.embedding_dims = %s "
           f"ORDER BY {distance}{{exact}} LIMIT %s")
    rows = nearest_rows(sql, lambda: [vector, *params, embedder.dimensions, vector, limit], limit=limit)
    # relaxed_order may return neighbours slightly out of order.
    return sorted(((r[0], float(r[1])) for r in rows), key=lambda r: -r[1])


def keyword_query_text(query: str) -> str:
    """Any of the query's words may match (websearch syntax, OR-joined; stop words drop out)."""
    return " or ".join(w for w in _WORD.findall(query) if w.lower() != "or")


# A lexeme found in more rows than this says little about relevance (think IDF); when rarer
# lexemes exist, only they select candidates, and every query lexeme still counts for the rank.
# When every lexeme is that common, ranking looks at a bounded sample of matches.
KEYWORD_COMMON_DF = 2000


def _lexemes(query: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT unnest(tsvector_to_array(to_tsvector('english', %s)))", [query])
        return [row[0] for row in cursor.fetchall()]


def _or_query(lexemes: list[str]) -> tuple[str, list[str]]:
    # plainto_tsquery quotes whatever a lexeme holds; || ORs the parts.
    return " || ".join(["plainto_tsquery('simple', %s)"] * len(lexemes)), list(lexemes)


def _keyword(bank: Bank, query: str, filters: RecallFilters, limit: int) -> list[tuple[int, float]]:
    lexemes = _lexemes(keyword_query_text(query)) if keyword_query_text(query) else []
    if not lexemes:
        return []
    rare: list[str] = []
    with connection.cursor() as cursor:
        for lexeme in lexemes:
            cursor.execute(
                "SELECT count(*) FROM (SELECT 1 FROM banks_memory WHERE bank_id = %s "
                "AND search_vector @@ plainto_tsquery('simple', %s) LIMIT %s) s",
                [bank.pk, lexeme, KEYWORD_COMMON_DF + 1],
            )
            if cursor.fetchone()[0] <= KEYWORD_COMMON_DF:
                rare.append(lexeme)
    where, params = _filters_sql(bank, filters)
    full_sql, full_params = _or_query(lexemes)
    select_sql, select_params = _or_query(rare or lexemes)
    sample = "" if rare else f"LIMIT {KEYWORD_COMMON_DF}"
    sql = (f"WITH cand AS (SELECT m.id, m.search_vector FROM banks_memory m "
           f"WHERE m.search_vector @@ ({select_sql}) AND {where} {sample}) "
           f"SELECT id, ts_rank_cd(search_vector, {full_sql}) AS rank FROM cand "
           f"ORDER BY rank DESC, id DESC LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*select_params, *params, *full_params, limit])
        return [(r[0], float(r[1])) for r in cursor.fetchall()]


def _graph(bank: Bank, query: str, filters: RecallFilters, limit: int) -> list[tuple[int, float]]:
    names = [e.name.lower() for e in get_llm().extract_entities(query)]
    if not names:
        return []
    where, params = _filters_sql(bank, filters)
    sql = (f"SELECT m.id, count(DISTINCT e.id) AS n FROM banks_entity e "
           f"JOIN banks_memoryentity me ON me.entity_id = e.id JOIN banks_memory m ON m.id = me.memory_id "
           f"WHERE e.bank_id = %s AND (lower(e.name) = ANY(%s) OR e.entity_id = ANY(%s)) AND {where} "
           f"GROUP BY m.id ORDER BY n DESC, m.id DESC LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [bank.pk, names, names, *params, limit])
        return [(r[0], float(r[1])) for r in cursor.fetchall()]


ARMS = {"semantic": _semantic, "keyword": _keyword, "graph": _graph}


def rrf_fuse(ranked_lists: dict[str, list[int]], k: int = RRF_K) -> list[tuple[int, float, list[str]]]:
    """Reciprocal-rank fusion: score(d) = sum over lists of 1 / (k + rank), rank from 1."""
    scores: dict[int, float] = {}
    sources: dict[int, list[str]] = {}
    for name, ids in ranked_lists.items():
        for rank, item in enumerate(ids, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            sources.setdefault(item, []).append(name)
    return sorted(((i, s, sources[i]) for i, s in scores.items()), key=lambda t: (-t[1], -t[0]))


def hit_from_memory(memory: Memory, score: float, bank_id: str, strategies: list[str] | None = None) -> RecallHit:
    return RecallHit(
        memory_id=memory.memory_id, text=memory.text, score=round(score, 6), bank_id=bank_id,
        fact_type=memory.fact_type, metadata=memory.metadata or {}, tags=list(memory.tags or []),
        occurred_at=memory.occurred_at, retained_at=memory.retained_at, source=memory.source,
        memory_layer=memory.memory_layer, layer=memory.memory_layer or "fact", strategies=strategies or [],
    )


def apply_token_budget(hits: list[RecallHit], max_tokens: int | None) -> tuple[list[RecallHit], bool]:
    if not max_tokens or max_tokens <= 0:
        return hits, False
    kept: list[RecallHit] = []
    used = 0
    for hit in hits:
        cost = estimate_tokens(hit.text)
        if used + cost > max_tokens:
            return kept, True
        kept.append(hit)
        used += cost
    return kept, False


def recall_memories(
    bank: Bank, query: str, *, max_results: int = 10, filters: RecallFilters | None = None,
    arms: tuple[str, ...] = ("semantic", "keyword", "graph"),
) -> tuple[list[RecallHit], int, RecallTrace, float | None]:
    """Fused raw-memory hits (no token budget), total fused candidates, trace, top cosine."""
    filters = filters or RecallFilters()
    limit = max(1, max_results) * OVERFETCH
    trace = RecallTrace()
    ranked: dict[str, list[int]] = {}
    top_semantic: float | None = None
    for name in arms:
        started = time.perf_counter()
        rows = ARMS[name](bank, query, filters, limit)
        trace.strategy_timings_ms[name] = round((time.perf_counter() - started) * 1000, 3)
        trace.strategy_candidate_counts[name] = len(rows)
        if name == "semantic" and rows:
            top_semantic = round(rows[0][1], 6)
        if rows:
            trace.strategies_used.append(name)
        ranked[name] = [r[0] for r in rows]
    trace.total_candidates = sum(trace.strategy_candidate_counts.values())
    fused = rrf_fuse(ranked)
    top = fused[:max_results]
    rows_by_pk = Memory.objects.in_bulk([pk for pk, _, _ in top])
    hits = [hit_from_memory(rows_by_pk[pk], score, bank.bank_id, srcs) for pk, score, srcs in top
            if pk in rows_by_pk]
    return hits, len(fused), trace, top_semantic


def recall_bank(
    bank: Bank, query: str, *, max_results: int = 10, max_tokens: int | None = None,
    filters: RecallFilters | None = None, include_directives: bool = True, include_observations: bool = False,
) -> RecallOutcome:
    started = time.perf_counter()
    hits, total, trace, top_semantic = recall_memories(bank, query, max_results=max_results, filters=filters)
    from banks.selectors import live_layers

    hits, total = live_layers.add_live_layers(
        bank, query, hits, total, trace, filters=filters or RecallFilters(), max_results=max_results,
        include_directives=include_directives, include_observations=include_observations,
    )
    hits, truncated = apply_token_budget(hits, max_tokens)
    layers: dict[str, int] = {}
    for hit in hits:
        layers[hit.layer] = layers.get(hit.layer, 0) + 1
    trace.layer_distribution = layers
    trace.latency_ms = round((time.perf_counter() - started) * 1000, 3)
    return RecallOutcome(hits=hits, total_available=total, truncated=truncated, trace=trace,
                         top_semantic_score=top_semantic)
