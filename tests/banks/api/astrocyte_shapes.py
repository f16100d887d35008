"""What Astrocyte 0.22's gateway answers, as the contract tests compare it: the documented response keys
of each shape, the banks a side-by-side client works on, and that client."""

from __future__ import annotations

from typing import Any

RETAIN_RESULT = {"stored", "memory_id", "deduplicated", "error", "retention_action", "curated", "memory_layer"}
RECALL_RESULT = {"hits", "total_available", "truncated", "trace", "authority_context", "top_semantic_score"}
MEMORY_HIT = {"text", "score", "fact_type", "metadata", "tags", "occurred_at", "source", "memory_id", "bank_id",
              "memory_layer", "utility_score", "retained_at", "chunk_id"}
RECALL_TRACE = {"strategies_used", "total_candidates", "fusion_method", "latency_ms", "strategy_timings_ms",
                "strategy_candidate_counts", "tier_used", "layer_distribution", "cache_hit", "wiki_tier_used"}
# What our trace adds (per-hit arm ranks, the time window a question named).
OUR_TRACE = {"hit_ranks", "time_window"}
MENTAL_MODEL = {"model_id", "bank_id", "title", "content", "scope", "source_ids", "revision", "refreshed_at", "kind",
                "structured_doc", "source_timestamps"}
ENTITY = {"id", "name", "entity_type", "aliases", "metadata", "embedding", "mention_count"}
GRAPH_HIT = {"memory_id", "text", "connected_entities", "depth", "score"}

B = "user-alice"
T = "acme:decisions"  # a tenant bank: Astrocyte's tenants are bank-id prefixes ("acme:")
LIVE = {"status"}
HEALTH = {"healthy", "message", "latency_ms", "last_check_at"}
INGEST = {"status", "aggregate", "sources"}
REFLECT_RESULT = {"answer", "confidence", "sources", "observations", "authority_context"}
FORGET_RESULT = {"deleted_count", "archived_count"}
DSAR = {"tenant_id", "principal", "tag_convention", "banks_processed", "memories_deleted", "details"}
HISTORY_RESULT = {"hits", "total_available", "truncated", "as_of", "bank_id", "trace"}
AUDIT_RESULT = {"scope", "bank_id", "gaps", "coverage_score", "memories_scanned", "trace"}
COMPILE_RESULT = {"bank_id", "scopes_compiled", "pages_created", "pages_updated", "noise_memories", "tokens_used",
                  "elapsed_ms", "error"}
WEBHOOK = {"ok", "error", "stored", "memory_id", "deduplicated", "retain_error"}
LIFECYCLE = {"archived_count", "deleted_count", "skipped_count", "actions"}
BANK_HEALTH = {"bank_id", "score", "status", "issues", "metrics", "assessed_at"}
HEALTH_METRICS = {"recall_hit_rate", "avg_recall_score", "dedup_rate", "reflect_success_rate", "avg_content_length",
                  "recall_to_retain_ratio", "retain_count", "recall_count", "reflect_count", "memory_count"}
LEGAL_HOLD = {"hold_id", "bank_id", "reason", "set_at", "set_by"}
STORAGE = {"tenant_id", "schema", "bytes_used", "measured_at", "snapshot_age_seconds", "breakdown"}
STORAGE_BREAKDOWN = {"heap_bytes", "index_bytes", "table_count", "memory_count", "last_write_at"}
MEMORY_CHANGE = {"id", "bank_id", "changed_at", "deleted", "text", "occurred_at", "retained_at", "tags", "fact_type",
                 "memory_layer", "metadata"}
SECRET = "contract-secret"


def client_on_every_bank(api_for: Any, make_bank: Any) -> Any:
    """A token that may do everything on every bank, with the banks the seed's calls name."""
    for bank_id in ("user-prefs", "incidents", "runbooks", "team-notes", "support-acme", "engineering",
                    "user-alice", "people"):
        make_bank(bank_id)
    return api_for({"*": ["read", "write", "forget", "admin"]})
