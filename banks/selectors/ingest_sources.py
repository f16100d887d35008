"""Push-ingest sources (webhooks) and their state, for /health/ingest and /v1/admin/sources.

A source is ``failing`` when its latest event is a refused delivery, ``idle`` when nothing was
delivered yet, ``disabled`` when an administrator turned it off, else ``ok``. Only an enabled
failing source makes ingest ``degraded``: a disabled one receives nothing by design.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from banks.models import WebhookSource

MAX_SOURCES = 500


@dataclass(frozen=True)
class SourceState:
    source: WebhookSource
    status: str
    healthy: bool
    message: str


def source_state(source: WebhookSource) -> SourceState:
    delivered: datetime | None = source.last_delivery_at
    failed: datetime | None = source.last_error_at
    if not source.enabled:
        return SourceState(source, "disabled", True, "disabled by an administrator")
    if failed is not None and (delivered is None or failed >= delivered):
        return SourceState(source, "failing", False, f"last delivery refused: {source.last_error}")
    if delivered is None:
        return SourceState(source, "idle", True, "no delivery yet")
    return SourceState(source, "ok", True, f"{source.delivery_count} deliveries accepted")


def ingest_sources(sources: Iterable[WebhookSource] | None = None) -> list[SourceState]:
    """Every source of a bank still in use (at most ``MAX_SOURCES``), by id."""
    rows = sources if sources is not None else (
        WebhookSource.objects.select_related("bank").filter(bank__deleted_at__isnull=True)
        .order_by("source_id")[:MAX_SOURCES])
    return [source_state(s) for s in rows]


def ingest_aggregate(states: list[SourceState]) -> tuple[bool, str]:
    failing = [s for s in states if not s.healthy]
    if failing:
        names = ", ".join(s.source.source_id for s in failing[:5])
        return False, f"{len(failing)} of {len(states)} webhook source(s) failing: {names}"
    return True, f"ingest ready; {len(states)} webhook source(s)" if states else "ingest ready"


__all__ = ["MAX_SOURCES", "SourceState", "ingest_aggregate", "ingest_sources", "source_state"]
