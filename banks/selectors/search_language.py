"""Is a bank's full-text index being re-computed in a new language?"""

from __future__ import annotations

from banks.models import Bank, Job, JobState
from banks.text_search import REINDEX_JOB_KIND as JOB_KIND


def search_reindex_job(bank: Bank) -> Job | None:
    """The queued or running re-index of the bank, if any."""
    return (Job.objects.filter(bank=bank, kind=JOB_KIND, state__in=[JobState.QUEUED, JobState.RUNNING])
            .order_by("-pk").first())
