"""Live-memory layers put in front of raw recall hits: directives, then observations.

Directives of the bank that are active and in scope come first (layer
``directive``); observations follow when asked for (layer ``observation``).
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.db import transaction

from banks.models import Bank, Observation
from banks.models.live import MentalModelKind
from banks.providers import bank_embedder
from banks.providers.embeddings import embedder_available
from banks.selectors.recall_query import query_vector
from banks.selectors.recall_types import RecallFilters, RecallHit, RecallTrace
from banks.vectors import distance_sql, enable_iterative_scan
from memoryhub.postgres.prepared import execute_prepared
from memoryhub.replica import read_connection


def directive_in_scope(scope: str, filters: RecallFilters) -> bool:
    if scope in ("bank", "") or scope.startswith("bank:"):
        return True
    if scope.startswith("tag:"):
        return bool(filters.tags) and scope[4:] in (filters.tags or [])
    return False


def add_live_layers(
    bank: Bank, query: str, hits: list[RecallHit], total: int, trace: RecallTrace, *,
    filters: RecallFilters, max_results: int, include_directives: bool, include_observations: bool,
) -> tuple[list[RecallHit], int]:
    front: list[RecallHit] = []
    if include_directives:
        for model_id, scope, revision, refreshed_at, doc, content in _active_directives(bank):
            if not directive_in_scope(scope, filters):
                continue
            front.append(RecallHit(
                memory_id=model_id, text=rule_text(doc, content), score=1.0, bank_id=bank.bank_id,
                fact_type="directive", metadata={"scope": scope, "revision": revision},
                memory_layer="directive", layer="directive", strategies=["directive"],
                retained_at=refreshed_at,
            ))
        if front:
            trace.strategies_used.insert(0, "directive")
            trace.strategy_candidate_counts["directive"] = len(front)
    if include_observations:
        started = time.perf_counter()
        observed = _observation_hits(bank, query, filters, max(1, max_results // 2))
        trace.strategy_timings_ms["observation"] = round((time.perf_counter() - started) * 1000, 3)
        trace.strategy_candidate_counts["observation"] = len(observed)
        if observed:
            trace.strategies_used.append("observation")
        front += observed
    return front + hits, total + len(front)


def _observation_hits(bank: Bank, query: str, filters: RecallFilters, limit: int) -> list[RecallHit]:
    """Live observations nearest the query (as of a moment, only those that existed then)."""
    embedder = bank_embedder(bank)
    if not embedder_available(embedder):
        return []  # observations are found by meaning only; the trace says the model is missing
    vector = query_vector(embedder, query)  # the one the semantic arm computed
    distance = distance_sql(embedder.dimensions, column="o.embedding")
    clauses = ["o.bank_id = %s", "o.embedding_dims = %s", "o.deleted_at IS NULL", "o.invalidated_at IS NULL"]
    params: list[Any] = [bank.pk, embedder.dimensions]
    if filters.as_of is not None:
        clauses.append("o.created_at <= %s")
        params.append(filters.as_of)
    # Vetted: the interpolated parts are distance_sql() (an int-cast dimension) and fixed clause strings; values are parameters.
    sql = (f"SELECT o.id, 1 - {distance} FROM banks_observation o WHERE {' AND '.join(clauses)} "  # noqa: S608
           f"ORDER BY {distance} LIMIT %s")
    connection = read_connection()
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        enable_iterative_scan(cursor, limit)
        cursor.execute(sql, [vector, *params, vector, limit])
        rows = cursor.fetchall()
    by_pk = Observation.objects.filter(bank=bank).defer("embedding", "search_vector").in_bulk([r[0] for r in rows])
    hits = []
    for pk, similarity in rows:
        observation = by_pk[pk]
        hits.append(RecallHit(
            memory_id=observation.observation_id, text=observation.text, score=round(float(similarity), 6),
            bank_id=bank.bank_id, fact_type="observation",
            metadata={"scope": observation.scope, "proof_count": observation.proof_count,
                      "confidence": observation.confidence},
            memory_layer="observation", layer="observation", strategies=["observation"],
            retained_at=observation.updated_at,
        ))
    return hits


def _active_directives(bank: Bank) -> list[tuple[Any, ...]]:
    """(model_id, scope, revision, refreshed_at, structured_doc, content) of the bank's active
    directives, highest priority first: every recall asks, so the query is written out rather than
    composed by the ORM each time."""
    if bank.pk is None:
        return []
    with read_connection().cursor() as cursor:
        execute_prepared(cursor, "SELECT model_id, scope, revision, refreshed_at, structured_doc, content "
                         "FROM banks_mentalmodel WHERE bank_id = %s AND kind = %s AND is_active "
                         "AND deleted_at IS NULL ORDER BY priority DESC, created_at",
                         [bank.pk, MentalModelKind.DIRECTIVE])
        return cursor.fetchall()


def rule_text(structured_doc: Any, content: str) -> str:
    """A directive's rule: the first paragraph of its document, else its content."""
    doc = json.loads(structured_doc) if isinstance(structured_doc, str) else (structured_doc or {})
    for section in (doc or {}).get("sections", []):
        for block in section.get("blocks", []):
            if block.get("type") == "paragraph" and block.get("text"):
                return str(block["text"])
    return (content or "").strip()
