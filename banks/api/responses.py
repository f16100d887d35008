"""Response bodies of /v1 as pydantic models, for the OpenAPI document (the views build plain dicts
with the same keys; tests/banks/api/test_astrocyte_contract.py checks the key sets)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class RetainResult(BaseModel):
    stored: bool
    memory_id: str | None
    deduplicated: bool
    error: str | None
    retention_action: str | None
    curated: bool
    memory_layer: str | None
    duplicate_of: str | None = None
    duplicate_text: str | None = None
    similarity: float | None = None


class MemoryHit(BaseModel):
    text: str
    score: float
    fact_type: str | None
    metadata: dict[str, Any]
    tags: list[str]
    occurred_at: str | None
    source: str | None
    memory_id: str
    bank_id: str
    memory_layer: str | None
    utility_score: float | None
    retained_at: str | None
    chunk_id: str | None
    layer: str


class HitRanks(BaseModel):
    """Why a memory ranked where it did: each arm's rank for it (1 = best) and its fused rank."""

    memory_id: str
    arm_ranks: dict[str, int]
    fused_rank: int | None
    fused_score: float | None
    # Present when the rerank stage ran: its rank and score for the memory.
    rerank_rank: int | None = None
    rerank_score: float | None = None
    # Present for a conversation turn: what it was indexed with besides its text (its speaker, its
    # session's date, the turns before it). The hit's text is the memory's own, always.
    context: str | None = None
    # Present when the memory was found by following the first arms' best hits (entity graph or session).
    hop_from: str | None = None


class RerankNote(BaseModel):
    """The rerank stage: ok (re-ordered), skipped (no reranker) or failed (fused order kept), and why."""

    status: str
    provider: str | None = None
    candidates: int | None = None
    moved: int | None = None
    latency_ms: float | None = None
    note: str | None = None


class QueryExpansion(BaseModel):
    """Query expansion: what the language model added to the keyword (and semantic) question."""

    status: str
    provider: str | None = None
    terms: list[str] = []
    cached: bool | None = None
    latency_ms: float | None = None
    note: str | None = None


class RecallTrace(BaseModel):
    strategies_used: list[str]
    total_candidates: int
    fusion_method: str
    latency_ms: float
    strategy_timings_ms: dict[str, float]
    strategy_candidate_counts: dict[str, int]
    tier_used: int | None
    layer_distribution: dict[str, int]
    cache_hit: bool | None
    wiki_tier_used: bool | None
    hit_ranks: list[HitRanks] = []
    time_window: dict[str, str] | None = None
    rerank: RerankNote | None = None
    expansion: QueryExpansion | None = None
    vector_index: str | None = None
    embeddings_pending: int | None = None
    # The bank's embedding model cannot load in the answering process: recall ran without meaning.
    semantic_unavailable: str | None = None


class RecallResult(BaseModel):
    hits: list[MemoryHit]
    total_available: int
    truncated: bool
    trace: RecallTrace | None
    authority_context: str | None
    top_semantic_score: float | None


class HistoryResult(BaseModel):
    hits: list[MemoryHit]
    total_available: int
    truncated: bool
    as_of: str
    bank_id: str
    trace: RecallTrace | None


class ForgetResult(BaseModel):
    deleted_count: int
    archived_count: int
    erased_count: int | None = None


class ReflectResult(BaseModel):
    answer: str
    confidence: float | None
    sources: list[MemoryHit] | None
    observations: list[str] | None
    authority_context: str | None
    directives: list[str]


class GapItem(BaseModel):
    topic: str
    severity: str
    reason: str


class AuditResult(BaseModel):
    scope: str
    bank_id: str
    gaps: list[GapItem]
    coverage_score: float
    memories_scanned: int
    trace: RecallTrace | None


class CompileResult(BaseModel):
    bank_id: str
    scopes_compiled: list[str]
    pages_created: int
    pages_updated: int
    noise_memories: int
    tokens_used: int
    elapsed_ms: int
    error: str | None


class Entity(BaseModel):
    id: str
    name: str
    entity_type: str
    aliases: list[str]
    metadata: dict[str, Any] | None
    embedding: list[float] | None
    mention_count: int


class GraphSearchResult(BaseModel):
    entities: list[Entity]


class GraphHit(BaseModel):
    memory_id: str
    text: str
    connected_entities: list[str]
    depth: int
    score: float


class GraphNeighborsResult(BaseModel):
    hits: list[GraphHit]


class MentalModel(BaseModel):
    model_id: str
    bank_id: str
    title: str
    content: str
    scope: str
    source_ids: list[str]
    revision: int
    refreshed_at: str | None
    kind: str
    structured_doc: dict[str, Any] | None
    source_timestamps: list[str] | None
    is_active: bool
    priority: int
    created_at: str | None
    deleted_at: str | None


class MentalModelList(BaseModel):
    models: list[MentalModel]


class Deleted(BaseModel):
    deleted: bool | int


class DeltaUpdateResult(BaseModel):
    model: MentalModel
    revision: int
    applied: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    changed: bool
    applied_ops: list[dict[str, Any]]
    skipped_ops: list[dict[str, Any]]


class Observation(BaseModel):
    id: str
    text: str
    trend: str
    proof_count: int
    source_ids: list[str]
    confidence: float
    updated_at: str | None
    scope: str
    created_at: str | None
    evidence_timestamps: list[str | None]
    invalidated_at: str | None
    bank_id: str


class ObservationList(BaseModel):
    observations: list[Observation]


class ExportResult(BaseModel):
    bank_id: str
    path: str
    exported_count: int
    # An AMA export: the memory and observation lines written.
    memories: int | None = None
    observations: int | None = None
    # Another format than AMA (markdown, csv, ...).
    format: str | None = None
    # A whole-bank archive: the records written, by kind.
    full: bool | None = None
    counts: dict[str, int] | None = None


class ImportResult(BaseModel):
    imported: int
    skipped: int
    errors: int
    format: str
    counts: dict[str, int]
    line_errors: list[dict[str, Any]]
    dry_run: bool
    aborted: str | None
