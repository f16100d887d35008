"""What consolidation has left to do in a bank, and how its runs went.

The backlog is the very set a run reads (``consolidation_backlog_rows``: live memories with a vector
that no live observation cites yet), so the number the page shows is what "run now" would scan (a run
takes the newest 500 of it). It is counted as every page counts (exact to 10,000, the planner's
estimate above). Runs are the bank's ``consolidation`` jobs: the one queued or running, and the newest
that finished.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from banks.models import Bank, Job, JobState, Memory, ObservationEvidence
from banks.selectors.memories import approximate_count

KIND = "consolidation"


def consolidation_backlog_rows(bank: Bank) -> QuerySet[Memory]:
    cited = ObservationEvidence.objects.filter(bank=bank, observation__bank=bank, observation__deleted_at__isnull=True,
                                               observation__invalidated_at__isnull=True).values("memory_ref")
    return Memory.objects.live().filter(bank=bank, embedding_dims__isnull=False).exclude(memory_id__in=cited)


@dataclass
class ConsolidationStatus:
    backlog: int
    backlog_exact: bool
    running: Job | None  # queued or running now: "run now" is refused meanwhile
    last: Job | None  # the newest finished run (done, failed or cancelled)

    @property
    def last_seconds(self) -> float | None:
        last = self.last
        if last is None or last.started_at is None or last.finished_at is None:
            return None
        return (last.finished_at - last.started_at).total_seconds()


def consolidation_status(bank: Bank) -> ConsolidationStatus:
    backlog, exact = approximate_count(consolidation_backlog_rows(bank))
    runs = Job.objects.filter(bank=bank, kind=KIND).order_by("-created_at", "-id")
    running = runs.filter(state__in=[JobState.QUEUED, JobState.RUNNING]).first()
    last = runs.exclude(state__in=[JobState.QUEUED, JobState.RUNNING]).first()
    return ConsolidationStatus(backlog=backlog, backlog_exact=exact, running=running, last=last)
