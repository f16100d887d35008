"""Audit: how well a bank covers what it is meant to hold, judged by the language model."""

from __future__ import annotations

from dataclasses import dataclass, field

from banks.content import estimate_tokens
from banks.models import Bank, Memory
from banks.providers import get_llm
from banks.providers.llm_types import Gap
from banks.selectors.recall import RecallTrace, recall_bank

SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


@dataclass
class CoverageOutcome:
    scope: str
    bank_id: str
    gaps: list[Gap] = field(default_factory=list)
    coverage_score: float = 0.0
    memories_scanned: int = 0
    trace: RecallTrace | None = None


def bank_audit(*, bank: Bank, scope: str, max_memories: int = 50, max_tokens: int | None = None,
               tags: list[str] | None = None) -> CoverageOutcome:
    """Sample the memories most relevant to the scope (then the most recent) and judge coverage."""
    from banks.selectors.recall import RecallFilters

    outcome = recall_bank(bank, scope, max_results=max_memories, filters=RecallFilters(tags=tags),
                          include_directives=False)
    texts = [h.text for h in outcome.hits]
    if len(texts) < max_memories:
        recent = Memory.objects.live().filter(bank=bank)
        if tags:
            recent = recent.filter(tags__overlap=tags)
        seen = {h.memory_id for h in outcome.hits}
        for memory_id, text in recent.order_by("-retained_at").values_list("memory_id", "text")[:max_memories]:
            if memory_id not in seen and len(texts) < max_memories:
                texts.append(text)
    if max_tokens:
        kept, used = [], 0
        for text in texts:
            used += estimate_tokens(text)
            if used > max_tokens:
                break
            kept.append(text)
        texts = kept
    coverage = get_llm().judge_coverage(scope, texts)
    gaps = sorted(coverage.gaps, key=lambda g: SEVERITY_ORDER.get(g.severity, 3))
    return CoverageOutcome(scope=scope, bank_id=bank.bank_id, gaps=gaps, coverage_score=coverage.score,
                           memories_scanned=len(texts), trace=outcome.trace)
