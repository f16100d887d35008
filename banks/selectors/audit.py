"""Reads of the audit log."""

from __future__ import annotations

from django.db.models import QuerySet

from banks.models import AuditEvent, Bank


def audit_events_about(*, bank: Bank, target_id: str, limit: int = 50) -> QuerySet[AuditEvent]:
    """The newest events that name ``target_id``; served by the GIN index on target_ids, so a memory's
    history costs the same whatever the size of the bank's log."""
    return AuditEvent.objects.filter(bank=bank, target_ids__contains=[target_id])[:limit]
