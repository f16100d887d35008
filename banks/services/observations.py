"""Observations: consolidated beliefs backed by evidence memories."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from banks.models import Bank, Observation
from banks.services.audit import audit_record


def observations_invalidate_for_memories(
    *, bank: Bank, memory_ids: Iterable[str], actor: str, reason: str = "source memories changed"
) -> int:
    """Invalidate every live observation that cites any of ``memory_ids``; returns how many."""
    ids = list(memory_ids)
    if not ids:
        return 0
    affected = list(
        Observation.objects.live()
        .filter(bank=bank, evidence__memory_ref__in=ids)
        .distinct()
        .values_list("observation_id", flat=True)
    )
    if not affected:
        return 0
    Observation.objects.filter(bank=bank, observation_id__in=affected).update(
        invalidated_at=timezone.now(), invalidated_reason=reason[:500]
    )
    audit_record(actor=actor, action="observation.invalidate", bank=bank, target_ids=affected, reason=reason,
                 details={"source_ids": ids[:100]})
    return len(affected)
