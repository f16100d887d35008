"""Recall across several banks: parallel, cascade, first_match (Astrocyte's MultiBankStrategy)."""

from __future__ import annotations

from banks.models import Bank
from banks.recall_fusion import DEFAULT_RRF_K
from banks.selectors import recall_shaping
from banks.selectors.recall import (
    RecallFilters,
    RecallHit,
    RecallOutcome,
    RecallTrace,
    apply_token_budget,
    recall_bank,
)
from memoryhub.errors import InvalidInput

STRATEGIES = ("parallel", "cascade", "first_match")


def _merge(hits: list[RecallHit], weights: dict[str, float], max_results: int) -> list[RecallHit]:
    for hit in hits:
        hit.score = round(hit.score * weights.get(hit.bank_id or "", 1.0), 6)
    hits.sort(key=lambda h: -h.score)
    best: dict[str, RecallHit] = {}
    for hit in hits:
        # Across banks the same text is one answer; keep its best-scoring copy.
        best.setdefault(hit.text, hit)
    return list(best.values())[:max_results]


def recall_many(
    banks: list[Bank], query: str, *, strategy: str = "parallel", max_results: int = 10,
    max_tokens: int | None = None, filters: RecallFilters | None = None, include_directives: bool | None = None,
    include_observations: bool = False, min_results_to_stop: int = 3, cascade_order: list[str] | None = None,
    bank_weights: dict[str, float] | None = None, options: recall_shaping.RecallOptions | None = None,
) -> RecallOutcome:
    if strategy not in STRATEGIES:
        raise InvalidInput(f"unknown multi-bank strategy {strategy!r}; use one of {', '.join(STRATEGIES)}",
                           field="strategy")
    weights = bank_weights or {}
    order = banks
    if strategy != "parallel" and cascade_order:
        ranked = {b: i for i, b in enumerate(cascade_order)}
        order = sorted(banks, key=lambda b: ranked.get(b.bank_id, len(ranked)))
    collected: list[RecallHit] = []
    total = 0
    trace = RecallTrace(fusion_method=f"multi_bank:{strategy}")
    for bank in order:
        outcome = recall_bank(bank, query, max_results=max_results, filters=filters,
                              include_directives=include_directives, include_observations=include_observations,
                              options=options, external=False)
        total += outcome.total_available
        trace.strategies_used.append(bank.bank_id)
        trace.strategy_candidate_counts[bank.bank_id] = len(outcome.hits)
        trace.strategy_timings_ms[bank.bank_id] = outcome.trace.latency_ms
        if strategy == "first_match" and outcome.hits:
            collected = outcome.hits
            break
        collected.extend(outcome.hits)
        if strategy == "cascade" and len({h.text for h in collected}) >= min_results_to_stop:
            break
    if strategy == "first_match" and not collected:
        merged: list[RecallHit] = []
    else:
        merged = _merge(collected, weights, max_results)
    if options:
        # The caller's own hits join once, over all banks, as one more ranked list.
        recall_shaping.record(trace, options)
        merged, total = recall_shaping.merge_external(merged, total, trace, options, rrf_k=DEFAULT_RRF_K, weight=1.0)
        merged = recall_shaping.shape_detail(merged[:max_results], options.detail_level)
    merged, truncated = apply_token_budget(merged, max_tokens)
    for hit in merged:
        trace.layer_distribution[hit.layer] = trace.layer_distribution.get(hit.layer, 0) + 1
    trace.total_candidates = total
    trace.latency_ms = round(sum(trace.strategy_timings_ms.values()), 3)
    return RecallOutcome(hits=merged, total_available=total, truncated=truncated, trace=trace)
