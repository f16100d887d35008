"""Observation reads, with the trend computed from evidence times."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Prefetch, QuerySet

from banks.live.trends import compute_trend
from banks.models import Bank, Observation, ObservationEvidence
from memoryhub.replica import tolerates_lag


@dataclass
class ObservationView:
    observation: Observation
    trend: str
    source_ids: list[str]
    evidence_times: list[datetime]
    # Evidence ids that name no memory of the observation's bank (kept as given, never linked).
    unresolved_ids: list[str] = field(default_factory=list)


def _with_evidence(rows: QuerySet[Observation], bank: Bank) -> QuerySet[Observation]:
    return rows.prefetch_related(Prefetch(
        "evidence", queryset=ObservationEvidence.objects.filter(bank=bank).order_by("evidence_at")))


def observation_view(observation: Observation, now: datetime | None = None) -> ObservationView:
    if "evidence" in getattr(observation, "_prefetched_objects_cache", {}):
        evidence = list(observation.evidence.all())
    else:  # by the bank as well as the observation (the related manager names the observation alone)
        evidence = list(ObservationEvidence.objects.filter(bank_id=observation.bank_id, observation=observation)
                        .order_by("id"))  # attached order, which the index on the observation alone gave
    times = [e.evidence_at for e in evidence]
    return ObservationView(observation=observation, trend=compute_trend(times or [observation.updated_at], now),
                           source_ids=[e.memory_ref for e in evidence], evidence_times=times,
                           unresolved_ids=[e.memory_ref for e in evidence if e.memory_id is None])


def observation_list(*, bank: Bank, scope: str | None = None, trend: str | None = None, limit: int = 100,
                     include_invalidated: bool = False, query: str | None = None) -> list[ObservationView]:
    rows = Observation.objects.filter(bank=bank, deleted_at__isnull=True)
    if not include_invalidated:
        rows = rows.filter(invalidated_at__isnull=True)
    if scope:
        rows = rows.filter(scope=scope)
    if query:
        rows = rows.filter(text__icontains=query)
    views = []
    # The trend is computed, not stored: filter after computing, within a bounded scan.
    for observation in _with_evidence(rows.order_by("-updated_at", "-id"), bank)[: max(limit * 10, 1000)]:
        view = observation_view(observation)
        if trend and view.trend != trend:
            continue
        views.append(view)
        if len(views) >= limit:
            break
    return views


@tolerates_lag
def observations_listed(bank: Bank, *, scope: str | None = None, trend: str | None = None, limit: int = 100,
                        include_invalidated: bool = False) -> list[ObservationView]:
    """``observation_list`` for the API and the agent tools: read from the replica when one serves this
    bank, as recall is (past the bank's own latest write); the operator pages read the primary."""
    return observation_list(bank=bank, scope=scope, trend=trend, limit=limit, include_invalidated=include_invalidated)
