"""Reads of the audit log."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import DurationField, F, QuerySet, Value

from banks.models import AuditEvent, Bank


def audit_events_about(*, bank: Bank, target_id: str, limit: int = 50) -> QuerySet[AuditEvent]:
    """The newest events that name ``target_id``, served by the GIN index on target_ids, so a memory's
    history costs the same whatever the size of the bank's log.

    The order is on an expression rather than the ``created_at`` column: given the column, PostgreSQL
    (which cannot estimate how rare one target id is) walks the whole log backwards by time hoping to
    meet the target's few events early, reading every event of every bank (0.3 s at 400k events).
    """
    newest = (F("created_at") + Value(timedelta(0), output_field=DurationField())).desc()
    return AuditEvent.objects.filter(bank=bank, target_ids__contains=[target_id]).order_by(newest, "-id")[:limit]
