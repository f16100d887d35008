"""Response bodies of /v1: the field order and names of Astrocyte's result dataclasses."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from banks.selectors.ingest_sources import SourceState
from banks.selectors.recall import RecallHit, RecallOutcome, RecallTrace
from banks.services.forget import ForgetOutcome
from banks.services.memories import RetainOutcome


def iso(value: datetime | date | None) -> str | None:
    return value.isoformat() if value is not None else None


def retain_result(outcome: RetainOutcome) -> dict[str, Any]:
    return {
        "stored": outcome.stored,
        "memory_id": outcome.memory_id,
        "deduplicated": outcome.deduplicated,
        "error": outcome.error,
        "retention_action": outcome.retention_action,
        "curated": False,
        "memory_layer": outcome.memory.memory_layer if outcome.memory else None,
        "duplicate_of": outcome.duplicate_of,
        "duplicate_text": outcome.duplicate_text,
        "similarity": outcome.similarity,
    }


def memory_hit(hit: RecallHit) -> dict[str, Any]:
    return {
        "text": hit.text,
        "score": hit.score,
        "fact_type": hit.fact_type,
        "metadata": hit.metadata,
        "tags": hit.tags,
        "occurred_at": iso(hit.occurred_at),
        "source": hit.source,
        "memory_id": hit.memory_id,
        "bank_id": hit.bank_id,
        "memory_layer": hit.memory_layer,
        "utility_score": None,
        "retained_at": iso(hit.retained_at),
        "chunk_id": None,
        "layer": hit.layer,
    }


def recall_trace(trace: RecallTrace | None) -> dict[str, Any] | None:
    if trace is None:
        return None
    return {
        "strategies_used": trace.strategies_used,
        "total_candidates": trace.total_candidates,
        "fusion_method": trace.fusion_method,
        "latency_ms": trace.latency_ms,
        "strategy_timings_ms": trace.strategy_timings_ms,
        "strategy_candidate_counts": trace.strategy_candidate_counts,
        "tier_used": trace.tier_used,
        "layer_distribution": trace.layer_distribution,
        "cache_hit": trace.cache_hit,
        "wiki_tier_used": trace.wiki_tier_used,
        # Beyond Astrocyte's trace: per returned memory, the rank each arm gave it and its fused rank.
        "hit_ranks": trace.hit_ranks,
        "time_window": trace.time_window,
        **({"rerank": trace.rerank} if trace.rerank is not None else {}),
        **({"expansion": trace.expansion} if trace.expansion is not None else {}),
        # The caller's recall options (layer_weights, detail_level, external_context), when given.
        **({"layer_weights": trace.layer_weights} if trace.layer_weights is not None else {}),
        **({"detail_level": trace.detail_level} if trace.detail_level is not None else {}),
        **({"external_context_count": trace.external_context_count}
           if trace.external_context_count is not None else {}),
        **({"vector_index": trace.vector_index} if trace.vector_index is not None else {}),
        **({"embeddings_pending": trace.embeddings_pending} if trace.embeddings_pending is not None else {}),
        **({"semantic_unavailable": trace.semantic_unavailable} if trace.semantic_unavailable is not None else {}),
    }


def recall_result(outcome: RecallOutcome, *, include_trace: bool = True) -> dict[str, Any]:
    return {
        "hits": [memory_hit(h) for h in outcome.hits],
        "total_available": outcome.total_available,
        "truncated": outcome.truncated,
        "trace": recall_trace(outcome.trace) if include_trace else None,
        "authority_context": None,
        "top_semantic_score": outcome.top_semantic_score,
    }


def forget_result(outcome: ForgetOutcome) -> dict[str, Any]:
    body: dict[str, Any] = {"deleted_count": outcome.deleted_count, "archived_count": outcome.archived_count}
    if outcome.erased_count is not None:  # an erase (or compliance forget) says how many it purged
        body["erased_count"] = outcome.erased_count
    return body


def ingest_source(state: SourceState, *, admin: bool = False) -> dict[str, Any]:
    """One push-ingest source: Astrocyte's health fields (healthy, message) and its delivery state."""
    source = state.source
    body: dict[str, Any] = {
        # Astrocyte's clients read a source's "id"; "source_id" is the same value, kept for ours.
        "id": source.source_id, "source_id": source.source_id, "type": "webhook", "status": state.status, "healthy": state.healthy,
        "message": state.message, "enabled": source.enabled, "last_delivery_at": iso(source.last_delivery_at),
        "last_error": source.last_error or None, "last_error_at": iso(source.last_error_at),
        "delivery_count": source.delivery_count, "error_count": source.error_count,
    }
    if admin:
        body.update({"bank_id": source.bank.bank_id, "tags": list(source.tags or []),
                     "created_at": iso(source.created_at)})
    return body
