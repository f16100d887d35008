"""Hybrid recall inside PostgreSQL.

Arms: ``semantic`` (pgvector cosine on the HNSW index, iterative scans so
filters do not starve results), ``keyword`` (BM25 on the GIN index, see
recall_keyword), ``graph`` (memories linked to entities named in the query) and,
when the question names a time, ``temporal`` (memories that occurred in that
window, by similarity). Their ranked lists are fused with weighted reciprocal-
rank fusion (banks.recall_fusion); each hit keeps the rank every arm gave it.
Directives and observations can be layered on top by the live-memory selectors.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from django.utils import timezone

from banks.content import estimate_tokens
from banks.models import Bank
from banks.providers import bank_embedder, get_llm
from banks.providers.embeddings import embedder_available
from banks.recall_fusion import HOP_NAMES, RecallConfig, rrf_fuse, vector_weights
from banks.recall_time import parse_time_window
from banks.selectors import live_layers, recall_shaping
from banks.selectors.recall_exact import index_state, semantic_plan
from banks.selectors.recall_expand import expand_stage
from banks.selectors.recall_hops import SEEDS as HOP_SEEDS
from banks.selectors.recall_hops import hop_lists
from banks.selectors.recall_keyword import keyword_arm
from banks.selectors.recall_query import query_vector
from banks.selectors.recall_rerank import rerank_stage
from banks.selectors.recall_types import RecallFilters, RecallHit, RecallOutcome, RecallTrace
from banks.vectors import (
    INDEX_BUILDING,
    INDEX_SHARED,
    distance_sql,
    nearest_rows,
    vector_scope,
    vectors_pending,
    walk_breadth,
)
from memoryhub.postgres.prepared import execute_prepared
from memoryhub.read_beside import read_beside
from memoryhub.replica import read_connection, tolerates_lag

__all__ = ["RecallFilters", "RecallHit", "RecallOutcome", "RecallTrace", "query_vector", "recall_bank",
           "recall_memories"]

# What a hit shows of a memory row (vectors stay in the database), read without the ORM: composing
# that query cost more than running it, on every recall.
_HIT_COLUMNS = ("id, memory_id, text, fact_type, metadata, tags, occurred_at, retained_at, source, memory_layer, "
                "context")


def _filters_sql(bank: Bank, filters: RecallFilters, alias: str = "m") -> tuple[str, list[Any]]:
    # bigint as the column: the full-text GIN index (bank_id, search_vector) through btree_gin only
    # takes a bank of its own type (an integer literal would leave the bank out of the index scan).
    clauses = [f"{alias}.bank_id = %s::bigint"]
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


def _narrows(filters: RecallFilters) -> bool:
    """Whether the filters keep only part of a bank's live memories."""
    return bool(filters.tags or filters.fact_types or filters.layers or filters.sources or filters.time_range
                or filters.as_of is not None)


def _semantic(bank: Bank, query: str, filters: RecallFilters, limit: int) -> list[tuple[int, float]]:
    embedder = bank_embedder(bank)
    vector = query_vector(embedder, query)
    where, params = _filters_sql(bank, filters)
    plan = semantic_plan(bank, embedder, vector, where, params, limit, narrowed=_narrows(filters),
                         tags=tuple(filters.tags or ()))
    if plan.rows is not None:
        return plan.rows
    if plan.tag_scope is not None:
        # The tag's clause comes with the scope, as literals: repeated as a parameter, the planner would
        # count its selectivity twice and sort the tagged rows rather than walk their graph.
        where, params = _filters_sql(bank, replace(filters, tags=None))
    distance = distance_sql(embedder.dimensions, column="m.embedding")
    # Only vectors of the same model are comparable, even at the same size (hashing-384 vs MiniLM).
    # Vetted: {distance} is distance_sql() (int-cast dimension), {where} _filters_sql() (fixed clauses).
    # {scope} picks the shared HNSW index or the bank's own (banks.vectors.vector_scope), from the flag
    # of the bank as this request loaded it.
    sql = (f"SELECT m.id, 1 - {distance} FROM banks_memory m WHERE {where} AND m.embedding_dims = %s "  # noqa: S608
           f"AND m.embedding_model = %s AND {{scope}} ORDER BY {distance}{{exact}} LIMIT %s")
    gather = plan.walk_rows
    # A tag with a graph of its own is walked there (banks.models.tag_indexes), as wide as a bank's own graph.
    rows = nearest_rows(sql, lambda: [vector, *params, embedder.dimensions, embedder.name, vector, gather],
                        limit=walk_breadth(gather, own=bank.own_vector_index or plan.tag_scope is not None,
                                           graph_rows=plan.graph_rows),
                        wanted=limit, scope=plan.tag_scope or vector_scope(bank.pk, "m", own=bank.own_vector_index),
                        exact_scope=plan.tag_scope or "TRUE")  # the tag's clause is a filter too
    # relaxed_order may return neighbours slightly out of order.
    return sorted(((r[0], float(r[1])) for r in rows), key=lambda r: -r[1])[:limit]


def _keyword(bank: Bank, query: str, filters: RecallFilters, limit: int) -> list[tuple[int, float]]:
    where, params = _filters_sql(bank, filters)
    return keyword_arm(bank, query, where, params, limit)


def _query_entities(query: str) -> list[str]:
    """Entity names in the question, by the local extractor.

    A recall does not wait on a remote language model for this (a round trip of a second or more,
    and a 503 when it is down): the memories' entities are extracted by ``MEMORYHUB_LLM`` when they
    are retained; the question only has to name them."""
    return [e.name.lower() for e in get_llm("extractive").extract_entities(query)]


# Turns after one naming an entity that inherit it for the graph arm when they name none themselves.
INHERIT_TURNS = 2


def _graph(bank: Bank, query: str, filters: RecallFilters, limit: int) -> list[tuple[int, float]]:
    names = _query_entities(query)
    if not names:
        return []
    where, params = _filters_sql(bank, filters)
    # Vetted: {where} comes from _filters_sql() (fixed clauses with %s placeholders); names are parameters.
    # A conversation turn naming no entity ("She said he needs two kilos") inherits those of the turn
    # naming them just before it in its session (INHERIT_TURNS turns on), a little below that turn.
    sql = (f"WITH named AS (SELECT m.id, count(DISTINCT e.id) AS n FROM banks_entity e "  # noqa: S608
           f"JOIN banks_memoryentity me ON me.entity_id = e.id AND me.bank_id = e.bank_id "
           f"JOIN banks_memory m ON m.id = me.memory_id "
           f"WHERE e.bank_id = %s AND (lower(e.name) = ANY(%s) OR e.entity_id = ANY(%s)) AND {where} "
           f"GROUP BY m.id ORDER BY n DESC, m.id DESC LIMIT %s), "
           f"inherited AS (SELECT f.id, s.n - 0.5 AS n FROM named s JOIN banks_memory c ON c.id = s.id "
           f"AND c.bank_id = {int(bank.pk)} "
           f"CROSS JOIN LATERAL (SELECT m.id FROM banks_memory m WHERE m.bank_id = c.bank_id "
           f"AND m.session_key = c.session_key AND (m.created_at, m.id) > (c.created_at, c.id) AND {where} "
           f"ORDER BY m.created_at, m.id LIMIT %s) f WHERE c.session_key IS NOT NULL "
           f"AND NOT EXISTS (SELECT 1 FROM banks_memoryentity x WHERE x.bank_id = {int(bank.pk)} "
           f"AND x.memory_id = f.id)) "
           f"SELECT id, max(n) FROM (SELECT id, n FROM named UNION ALL SELECT id, n FROM inherited) u "
           f"GROUP BY id ORDER BY 2 DESC, id DESC LIMIT %s")
    with read_connection().cursor() as cursor:
        cursor.execute(sql, [bank.pk, names, names, *params, limit, *params, INHERIT_TURNS, limit])
        return [(r[0], float(r[1])) for r in cursor.fetchall()]


def _temporal(bank: Bank, query: str, filters: RecallFilters, limit: int) -> list[tuple[int, float]]:
    """Memories that occurred inside the window the question names, by similarity (none without a window)."""
    if filters.time_range is not None:
        return []  # the caller's own time_range already restricts every arm
    window = parse_time_window(query, filters.reference_date or timezone.now())
    if window is None:
        return []
    return _semantic(bank, query, replace(filters, time_range=(window.start, window.end)), limit)


ARMS = {"semantic": _semantic, "keyword": _keyword, "graph": _graph, "temporal": _temporal}


def hit_rows(bank_pk: int, pks: list[int]) -> dict[int, tuple[Any, ...]]:
    """The rows of ``pks`` (of bank ``bank_pk``: named, so the statement is routed to one bank) as
    ``hit_from_row`` reads them, by primary key."""
    if not pks:
        return {}
    with read_connection().cursor() as cursor:
        execute_prepared(cursor, f"SELECT {_HIT_COLUMNS} FROM banks_memory WHERE bank_id = %s AND id = ANY(%s)",  # noqa: S608
                         [bank_pk, pks])
        return {row[0]: row for row in cursor.fetchall()}


def hit_from_row(row: tuple[Any, ...], score: float, bank_id: str, strategies: list[str] | None = None) -> RecallHit:
    """A hit from a row of ``hit_rows`` (columns ``_HIT_COLUMNS``)."""
    _, memory_id, text, fact_type, metadata, tags, occurred_at, retained_at, source, memory_layer, context = row
    if isinstance(metadata, str):  # jsonb arrives as text on Django's connections
        metadata = json.loads(metadata)
    return RecallHit(
        memory_id=memory_id, text=text, score=round(score, 6), bank_id=bank_id, fact_type=fact_type,
        metadata=metadata or {}, tags=list(tags or []), occurred_at=occurred_at, retained_at=retained_at,
        source=source, memory_layer=memory_layer, layer=memory_layer or "fact", strategies=strategies or [],
        context=context,
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


def _timed_arm(name: str, bank: Bank, query: str, filters: RecallFilters,
               limit: int) -> tuple[list[tuple[int, float]], float]:
    started = time.perf_counter()
    rows = ARMS[name](bank, query, filters, limit)
    return rows, round((time.perf_counter() - started) * 1000, 3)


def _run_arms(bank: Bank, arms: tuple[str, ...], query: str, keyword_query: str, filters: RecallFilters,
              limit: int) -> dict[str, tuple[list[tuple[int, float]], float]]:
    """Each arm's ranked rows and milliseconds. With the keyword arm in, the semantic arm runs on a
    second connection while the others run here (memoryhub.read_beside): on a big bank the graph walk
    and BM25 cost about the same, and a question waited for both one after the other."""
    beside = read_beside(_timed_arm, "semantic", bank, query, filters, limit) \
        if {"semantic", "keyword"} <= set(arms) else None
    results = {name: _timed_arm(name, bank, keyword_query if name == "keyword" else query, filters, limit)
               for name in arms if not (beside is not None and name == "semantic")}
    if beside is not None:
        results["semantic"] = beside.result()
    return results


def recall_memories(
    bank: Bank, query: str, *, max_results: int = 10, filters: RecallFilters | None = None,
    arms: tuple[str, ...] | None = None, config: RecallConfig | None = None,
    layer_weights: dict[str, float] | None = None,
) -> tuple[list[RecallHit], int, RecallTrace, float | None]:
    """Fused raw-memory hits (no token budget), total fused candidates, trace, top cosine."""
    filters = filters or RecallFilters()
    config = config or bank_recall_config(bank)
    arms = arms or config.arms
    if config.time_aware and "temporal" not in arms and "semantic" in arms:
        arms = (*arms, "temporal")
    limit = config.candidates(max_results)
    trace = RecallTrace()  # weighted RRF; "rrf" is the name Astrocyte reports for it too
    embedder = bank_embedder(bank)
    if not embedder_available(embedder) and {"semantic", "temporal"} & set(arms):
        # The bank's model cannot load here: no other model's vectors stand in for it (they would not
        # compare); the question is answered by the other arms, and the trace says why.
        trace.semantic_unavailable = f"{embedder.name} cannot load in this process: {getattr(embedder, 'reason', '')}"
        arms = tuple(a for a in arms if a not in ("semantic", "temporal")) or ("keyword",)
    ranked: dict[str, list[int]] = {}
    top_semantic: float | None = None
    expansion: dict[str, Any] = {}
    keyword_query = expand_stage(query, config, expansion)
    if expansion:
        trace.expansion = expansion
        if "latency_ms" in expansion:
            trace.strategy_timings_ms["expansion"] = expansion["latency_ms"]
    if "semantic" in arms or "temporal" in arms:
        # Embedding the question is a stage of its own (the arms that need it share the vector).
        started = time.perf_counter()
        query_vector(bank_embedder(bank), query)
        trace.strategy_timings_ms["embed"] = round((time.perf_counter() - started) * 1000, 3)
    results = _run_arms(bank, arms, query, keyword_query, filters, limit)
    for name in arms:
        rows, trace.strategy_timings_ms[name] = results[name]
        trace.strategy_candidate_counts[name] = len(rows)
        if name == "semantic" and rows:
            top_semantic = round(rows[0][1], 6)
        if rows:
            trace.strategies_used.append(name)
        ranked[name] = [r[0] for r in rows]
    if ranked.get("temporal"):
        window = parse_time_window(query, filters.reference_date or timezone.now())
        trace.time_window = window.as_dict() if window else None
    trace.total_candidates = sum(trace.strategy_candidate_counts.values())
    if ("semantic" in arms or "temporal" in ranked) and (state := index_state(bank)) != INDEX_SHARED:
        trace.vector_index = state
        trace.embeddings_pending = vectors_pending(bank.pk) if state == INDEX_BUILDING else None
    # The caller's layer weights act on the fused order, before the rerank window and the cut.
    # A weak embedder's semantic arm counts for less (banks.recall_fusion.vector_weights).
    weights = vector_weights(config, getattr(embedder, "fusion_weight", 1.0))
    fused = recall_shaping.weigh_fused(bank.pk, rrf_fuse(ranked, k=config.rrf_k, weights=weights), layer_weights)
    hop_from: dict[int, int] = {}
    if config.multi_hop and fused:
        started = time.perf_counter()
        where, params = _filters_sql(bank, filters)
        hops, hop_from = hop_lists(bank.pk, [f.pk for f in fused[:HOP_SEEDS]], filters_sql=where, filters_params=params)
        trace.strategy_timings_ms["hops"] = round((time.perf_counter() - started) * 1000, 3)
        for name, pks in hops.items():
            ranked[name] = pks
            trace.strategy_candidate_counts[name] = len(pks)
            trace.strategies_used.append(name)
        if hops:
            fused = recall_shaping.weigh_fused(bank.pk, rrf_fuse(ranked, k=config.rrf_k, weights=weights),
                                               layer_weights)
    fused_ranks = {item.pk: rank for rank, item in enumerate(fused[:max(config.rerank_depth, max_results)], 1)}
    rerank_note: dict[str, Any] = {}
    fused, reranked = rerank_stage(bank.pk, query, fused, config, max_results, rerank_note)
    if rerank_note:
        trace.rerank = rerank_note
        if "latency_ms" in rerank_note:
            trace.strategy_timings_ms["rerank"] = rerank_note["latency_ms"]
    top = fused[:max_results]
    started = time.perf_counter()
    rows_by_pk = hit_rows(bank.pk, [f.pk for f in top])
    trace.strategy_timings_ms["load"] = round((time.perf_counter() - started) * 1000, 3)
    hits: list[RecallHit] = []
    memory_ids = {pk: row[1] for pk, row in rows_by_pk.items()}
    for rank, item in enumerate(top, start=1):
        row = rows_by_pk.get(item.pk)
        if row is None:
            continue
        again = reranked.get(item.pk)
        hit = hit_from_row(row, again.score if again else item.score, bank.bank_id, list(item.arm_ranks))
        hit.arm_ranks, hit.fused_score = dict(item.arm_ranks), round(item.score, 6)
        hit.fused_rank = fused_ranks.get(item.pk, rank)
        if again is not None:
            hit.rerank_rank, hit.rerank_score = again.rank, again.score
        if item.pk in hop_from and set(item.arm_ranks) <= set(HOP_NAMES):
            hit.hop_from = memory_ids.get(hop_from[item.pk])  # found only by a hop: from which hit
        hits.append(hit)
    # A conversation turn's context (banks.turn_context) is shown here, never as the hit's text.
    trace.hit_ranks = [{"memory_id": h.memory_id, "arm_ranks": h.arm_ranks, "fused_rank": h.fused_rank,
                        "fused_score": h.fused_score, **({"context": h.context} if h.context else {}),
                        **({"hop_from": h.hop_from} if h.hop_from else {}),
                        **({"rerank_rank": h.rerank_rank, "rerank_score": h.rerank_score} if reranked else {})}
                       for h in hits]
    return hits, len(fused), trace, top_semantic


def bank_recall_config(bank: Bank) -> RecallConfig:
    return RecallConfig.from_settings((bank.config or {}).get("recall"))


@tolerates_lag
def recall_bank(
    bank: Bank, query: str, *, max_results: int = 10, max_tokens: int | None = None,
    filters: RecallFilters | None = None, include_directives: bool | None = None, include_observations: bool = False,
    config: RecallConfig | None = None, options: recall_shaping.RecallOptions | None = None,
    external: bool = True,
) -> RecallOutcome:
    """``options``: Astrocyte's layer_weights, detail_level, external_context (``external`` False leaves
    the last to a multi-bank caller, which merges it once over all banks). ``include_directives`` None
    is the bank's own default (``config["recall"]["include_directives"]``, on unless turned off)."""
    started = time.perf_counter()
    config = config or bank_recall_config(bank)
    if include_directives is None:
        include_directives = config.include_directives
    hits, total, trace, top_semantic = recall_memories(bank, query, max_results=max_results, filters=filters,
                                                       config=config,
                                                       layer_weights=options.layer_weights if options else None)
    hits, total = live_layers.add_live_layers(
        bank, query, hits, total, trace, filters=filters or RecallFilters(), max_results=max_results,
        include_directives=include_directives, include_observations=include_observations,
    )
    hits, total = recall_shaping.apply(hits, total, trace, options, max_results=max_results, rrf_k=config.rrf_k,
                                       semantic_weight=config.weights.get("semantic", 1.0), external=external)
    hits, truncated = apply_token_budget(hits, max_tokens)
    layers: dict[str, int] = {}
    for hit in hits:
        layers[hit.layer] = layers.get(hit.layer, 0) + 1
    trace.layer_distribution = layers
    trace.latency_ms = round((time.perf_counter() - started) * 1000, 3)
    return RecallOutcome(hits=hits, total_available=total, truncated=truncated, trace=trace,
                         top_semantic_score=top_semantic)
