"""Webhook sources: who may push memories into which bank, signing with which secret.

A source's secret decides who can write into its bank, so every change is audited on the bank
(which fields changed, and that the secret did, never its value).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from banks.access import Principal, authorize
from banks.models import WebhookSource
from banks.services.audit import audit_record

# Changed by the ingest route alone (banks.services.webhooks), never by an operator.
DELIVERY_STATE = ("last_delivery_at", "last_error_at", "last_error", "delivery_count", "error_count")


def webhook_source_save(*, source: WebhookSource, actor: str, changed: list[str] | None = None,
                        by: Principal | None = None) -> WebhookSource:
    """Create ``source`` (unsaved) or write the ``changed`` fields of an existing one, with its audit event.
    Its secret lets anyone write into the bank: ``admin`` on the bank (and on the bank it leaves)."""
    authorize(by, source.bank.bank_id, "admin")
    creating = source.pk is None
    fields = [f for f in (changed or []) if f not in DELIVERY_STATE]
    details: dict[str, Any] = {"fields": [f for f in fields if f != "secret"]}
    if creating or "secret" in fields:
        details["secret_changed"] = True
    with transaction.atomic():
        if creating:
            source.save()
        else:
            before = WebhookSource.objects.select_for_update().select_related("bank").get(pk=source.pk)
            authorize(by, before.bank.bank_id, "admin")
            if before.bank_id != source.bank_id:
                audit_record(actor=actor, action="webhook_source.update", bank=before.bank,
                             target_ids=[before.source_id], details={"moved_to": source.bank.bank_id})
            if fields:
                source.save(update_fields=fields)
        audit_record(actor=actor, action="webhook_source.create" if creating else "webhook_source.update",
                     bank=source.bank, target_ids=[source.source_id], details=details)
    return source


def webhook_source_delete(*, source: WebhookSource, actor: str, by: Principal | None = None) -> None:
    authorize(by, source.bank.bank_id, "admin")
    with transaction.atomic():
        audit_record(actor=actor, action="webhook_source.delete", bank=source.bank, target_ids=[source.source_id])
        source.delete()


__all__ = ["webhook_source_delete", "webhook_source_save"]
