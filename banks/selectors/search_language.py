"""Is a bank's full-text index being re-computed in a new language, its conversation contexts rebuilt?"""

from __future__ import annotations

from banks.models import Bank, Job, JobState
from banks.text_search import REINDEX_JOB_KIND as JOB_KIND
from banks.turn_context import REBUILD_JOB_KIND


def search_reindex_job(bank: Bank) -> Job | None:
    """The queued or running re-index of the bank, if any."""
    return (Job.objects.filter(bank=bank, kind=JOB_KIND, state__in=[JobState.QUEUED, JobState.RUNNING])
            .order_by("-pk").first())


def context_rebuild_job(bank: Bank) -> Job | None:
    """The newest rebuild of the bank's conversation contexts (its context window changed), in any state."""
    return Job.objects.filter(bank=bank, kind=REBUILD_JOB_KIND).order_by("-pk").first()
