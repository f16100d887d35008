"""Celery tasks of the domain: thin, take ids, reload rows, call services."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="banks.ping")
def ping(value: str) -> str:
    """Round trip used by health checks and tests of the worker wiring."""
    from banks.models import AuditEvent

    AuditEvent.objects.create(actor="worker", action="worker.ping", details={"value": value})
    return value
