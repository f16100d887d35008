"""The optional rerank stage of recall: re-score the best fused candidates with a reranker.

Runs only when the bank turns it on (``config.recall.rerank``) and ``MEMORYHUB_RERANK`` names
a reranker. The top ``rerank_depth`` fused candidates (never fewer than asked for) are scored
against the question and re-ordered; the rest keep their fused order after them. A reranker
that fails or times out is skipped: recall answers in the fused order and the trace says why.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from banks.models import Memory
from banks.providers.base import ProviderError
from banks.providers.rerank import get_reranker
from banks.recall_fusion import Fused, RecallConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reranked:
    rank: int
    score: float


def rerank_order(window: list[Fused], scores: list[float]) -> list[int]:
    """Indexes of ``window`` best first by reranker score; ties keep the fused order."""
    return sorted(range(len(window)), key=lambda i: (-scores[i], i))


def rerank_stage(bank_pk: int, query: str, fused: list[Fused], config: RecallConfig, max_results: int,
                 note: dict[str, Any]) -> tuple[list[Fused], dict[int, Reranked]]:
    """(the candidates in their final order, per re-scored pk its rank and score); ``note`` gets the trace."""
    if not config.rerank or not fused:
        return fused, {}
    try:
        reranker = get_reranker()
    except ProviderError as exc:
        note.update(status="failed", note=f"{exc}; kept the fused order")
        return fused, {}
    if reranker is None:
        note.update(status="skipped", note="no reranker configured (MEMORYHUB_RERANK=none)")
        return fused, {}
    window = fused[:max(config.rerank_depth, max_results)]
    texts = dict(Memory.objects.filter(bank_id=bank_pk, pk__in=[f.pk for f in window]).values_list("pk", "text"))
    started = time.perf_counter()
    try:
        scores = reranker.score(query, [texts.get(f.pk, "") for f in window])
        if len(scores) != len(window):
            raise ProviderError(reranker.name, f"scored {len(scores)} of {len(window)} candidates")
    except Exception as exc:  # whatever the reranker does, recall still answers (in the fused order)
        logger.warning("rerank skipped: %s", exc)
        note.update(provider=reranker.name, status="failed", candidates=len(window),
                    latency_ms=round((time.perf_counter() - started) * 1000, 3),
                    note=f"{exc.__class__.__name__}: {exc}; kept the fused order")
        return fused, {}
    order = rerank_order(window, scores)
    ranks = {window[i].pk: Reranked(rank=new, score=round(scores[i], 6)) for new, i in enumerate(order, start=1)}
    moved = sum(1 for new, i in enumerate(order, start=1) if new != i + 1)
    note.update(provider=reranker.name, status="ok", candidates=len(window), moved=moved,
                latency_ms=round((time.perf_counter() - started) * 1000, 3))
    return [window[i] for i in order] + fused[len(window):], ranks
