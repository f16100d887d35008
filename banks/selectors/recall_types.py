"""What a recall is asked (filters) and what it answers (hits, trace): plain data, no queries.

Kept apart from the recall selector so the layers added in front of raw hits
(directives, observations) can build hits without importing the selector.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass
class RecallFilters:
    tags: list[str] | None = None
    fact_types: list[str] | None = None
    time_range: tuple[datetime | None, datetime | None] | None = None
    as_of: datetime | None = None
    layers: list[str] | None = None
    sources: list[str] | None = None
    # "Now" for relative times in the question ("last June"); does not filter.
    reference_date: datetime | None = None


@dataclass
class RecallHit:
    memory_id: str
    text: str
    score: float
    # None only for a caller's external_context hit that names no bank.
    bank_id: str | None
    fact_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    occurred_at: datetime | None = None
    retained_at: datetime | None = None
    source: str | None = None
    memory_layer: str | None = None
    layer: str = "fact"
    strategies: list[str] = field(default_factory=list)
    # Per arm that found it, the 1-based rank there; the fused rank and score before any rerank.
    arm_ranks: dict[str, int] = field(default_factory=dict)
    fused_rank: int | None = None
    fused_score: float | None = None
    # When the rerank stage ran: the rank and score it gave (None: not re-scored).
    rerank_rank: int | None = None
    rerank_score: float | None = None
    # What a conversation turn was indexed with besides its text (banks.turn_context); trace only.
    context: str | None = None
    # Found only by the multi-hop stage: the memory id of the hit it was reached from (trace only).
    hop_from: str | None = None


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
    # Per returned hit: memory_id, arm_ranks {arm: rank}, fused_rank, fused_score (see RecallHit), and the
    # context a conversation turn was indexed with.
    hit_ranks: list[dict[str, Any]] = field(default_factory=list)
    time_window: dict[str, str] | None = None
    # The rerank stage when the bank asks for it: provider, status (ok/skipped/failed), candidates, note.
    rerank: dict[str, Any] | None = None
    # Query expansion when the bank asks for it: provider, status, the terms added, note.
    expansion: dict[str, Any] | None = None
    # The per-call options used (banks.selectors.recall_shaping), None when not given.
    layer_weights: dict[str, float] | None = None
    detail_level: str | None = None
    external_context_count: int | None = None
    # For a bank on its own HNSW index (banks.services.vector_indexes): "own", or "building" while it is
    # being built after a big import (the semantic arm is answered exactly meanwhile, slower but right).
    # None for banks on the shared index.
    vector_index: str | None = None
    # Memories of such a bank a big import stored before their vectors: found by keyword, not yet by meaning.
    embeddings_pending: int | None = None
    # Why the semantic (and temporal) arm did not run: the bank's model cannot load in this process.
    semantic_unavailable: str | None = None


@dataclass
class RecallOutcome:
    hits: list[RecallHit]
    total_available: int
    truncated: bool
    trace: RecallTrace
    top_semantic_score: float | None = None
