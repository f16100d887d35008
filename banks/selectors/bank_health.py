"""Bank health in Astrocyte's ``BankHealth`` shape, from what the database really holds.

Recall and reflect counts come from the bank's usage counters (banks.services.usage), kept since
this version. Every metric is a number, as Astrocyte's ``dict[str, float]``: a rate with nothing to
measure yet takes Astrocyte's value for that case (0.0, and 1.0 for the reflect success rate: no
reflect, no failure); ``details`` says how many of each there were. ``dedup_rate`` is
over the retains received through the API and MCP (imports and sync pushes have their own reports).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Avg, Max
from django.db.models.functions import Length
from django.utils import timezone

from banks.models import AuditEvent, Bank, BankUsage, Job, JobState, Memory
from banks.selectors.holds import active_hold_ids
from banks.selectors.memories import bank_memory_count

# Average length is measured over the newest memories so a huge bank answers fast.
LENGTH_SAMPLE = 1000
FAILED_JOB_WINDOW = timedelta(days=7)
BACKLOG_WARNING = 10
# Below this many recalls a hit rate says nothing yet.
MIN_RECALLS_FOR_RATE_ISSUE = 20
LOW_HIT_RATE = 0.5
# Most banks one "every bank" health answer assesses.
MAX_HEALTH_BANKS = 100


@dataclass
class BankHealthView:
    bank_id: str
    score: float
    status: str
    issues: list[dict[str, str]] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    assessed_at: datetime | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _issue(severity: str, code: str, message: str, recommendation: str) -> dict[str, str]:
    return {"severity": severity, "code": code, "message": message, "recommendation": recommendation}


def _rate(part: float, whole: float, *, none_yet: float = 0.0) -> float:
    return round(float(part) / float(whole), 4) if whole else none_yet


def bank_health(bank: Bank | None, now: datetime | None = None, *, bank_id: str = "") -> BankHealthView:
    """The health of ``bank``; None stands for a granted bank id nothing was written to yet."""
    now = now or timezone.now()
    usage = BankUsage()
    if bank is not None and not bank.is_never_written:
        usage = BankUsage.objects.filter(bank=bank).first() or usage
    if bank is None:
        memory_count, avg_length, last_retain_at, retain_count, backlog, failed = 0, None, None, 0, 0, 0
        count_exact = True
        holds: list[str] = []
    else:
        bank_id = bank.bank_id
        live = Memory.objects.live().filter(bank=bank)
        # The one count every page shows: exact to 10,000, above it the same "about N" estimate (an exact
        # COUNT of a million-row bank would take seconds, and disagree with the pages).
        memory_count, count_exact = bank_memory_count(bank)
        newest = live.order_by("-retained_at", "-id").values("pk")[:LENGTH_SAMPLE]
        avg_length = Memory.objects.filter(pk__in=newest).aggregate(n=Avg(Length("text")))["n"]
        last_retain_at = Memory.objects.filter(bank=bank).aggregate(t=Max("retained_at"))["t"]
        retain_count = AuditEvent.objects.filter(bank=bank, action="memory.retain").count()
        jobs = Job.objects.filter(bank=bank)
        backlog = jobs.filter(state__in=[JobState.QUEUED, JobState.RUNNING]).count()
        failed = jobs.filter(state=JobState.FAILED, created_at__gte=now - FAILED_JOB_WINDOW).count()
        holds = active_hold_ids(bank)

    issues = []
    if failed:
        issues.append(_issue("warning", "failed_jobs", f"{failed} background job(s) failed in the last 7 days",
                             "Open the failed jobs and retry them after fixing the cause."))
    if backlog >= BACKLOG_WARNING:
        issues.append(_issue("warning", "job_backlog", f"{backlog} jobs are queued or running",
                             "Check that the worker is running."))
    if memory_count == 0:
        issues.append(_issue("info", "empty_bank", "The bank holds no memories", "Retain or import memories."))
    if holds:
        issues.append(_issue("info", "legal_hold", f"Under legal hold: {', '.join(holds)}",
                             "Forget and lifecycle deletion are refused until the hold is released."))
    if usage.error_count:
        issues.append(_issue("warning", "recall_errors", f"{usage.error_count} recall or reflect request(s) failed",
                             "Check the server log around the last error time."))
    hit_rate = _rate(usage.recall_hit_count, usage.recall_count)
    if usage.recall_count >= MIN_RECALLS_FOR_RATE_ISSUE and hit_rate < LOW_HIT_RATE:
        issues.append(_issue("warning", "low_recall_hit_rate",
                             f"Only {hit_rate:.0%} of {usage.recall_count} recalls found anything",
                             "Check that clients recall the bank they retain to, and the tags they filter on."))
    penalty = sum({"critical": 0.5, "warning": 0.2, "info": 0.0}[i["severity"]] for i in issues)
    score = round(max(0.0, 1.0 - penalty), 4)
    status = "healthy" if score >= 0.8 else ("warning" if score >= 0.5 else "unhealthy")
    metrics: dict[str, float] = {
        "recall_hit_rate": hit_rate,
        "avg_recall_score": _rate(usage.recall_score_sum, usage.recall_hit_count),
        "dedup_rate": _rate(usage.retain_dedup_count, usage.retain_call_count),
        "reflect_success_rate": _rate(usage.reflect_success_count, usage.reflect_count, none_yet=1.0),
        "avg_content_length": round(float(avg_length), 2) if avg_length is not None else 0.0,
        "recall_to_retain_ratio": _rate(usage.recall_count, retain_count),
        "retain_count": float(retain_count), "recall_count": float(usage.recall_count),
        "reflect_count": float(usage.reflect_count), "memory_count": float(memory_count),
    }
    details = {"memory_count_exact": count_exact, "last_retain_at": last_retain_at, "job_backlog": backlog, "failed_jobs_7d": failed,
               "legal_holds": holds, "last_recalled_at": usage.last_recalled_at,
               "error_count": usage.error_count, "last_error_at": usage.last_error_at}
    return BankHealthView(bank_id=bank_id, score=score, status=status, issues=issues, metrics=metrics,
                          assessed_at=now, details=details)


__all__ = ["MAX_HEALTH_BANKS", "BankHealthView", "bank_health"]
