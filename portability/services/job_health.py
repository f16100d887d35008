"""The periodic check that keeps jobs honest when a worker dies.

* A running job whose heartbeat stopped is marked failed, saying it can be resumed.
* A queued job nobody ever picked up (its message was never sent, or was lost) is
  marked failed after a grace period, so it does not wait forever.
* A bank moved onto its own vector index by an import that was killed before building it gets a job
  queued that fills its vectors and builds the index (its semantic recall is exact, hence slow, until
  then); the sweep itself builds nothing, so it stays quick and holds no lock an import needs.
* A dead import, re-embedding or re-extraction is resumed by ``portability.jobs.jobs_auto_resume``
  (called right after this by the sweep task), at most ``MEMORYHUB_JOB_AUTO_RESUMES`` times in a row.
* Temporary files and directories left by killed exports (``atomic_write``'s
  ``.<name>.*.tmp`` and directory exports' ``.<name>.*.partial``) are removed from
  the portability roots once they are older than any live export could be.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from banks.models import Job, JobState
from banks.services.jobs import job_is_stale, stale_after
from memoryhub.errors import Conflict
from portability.paths import Location, remove_stale_temporaries
from portability.roots import portability_roots

RESUMABLE = ("import", "reextract_entities", "reembed")


def _queued_grace() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "MEMORYHUB_JOB_QUEUED_GRACE_SECONDS", 3600)))


def _temp_grace_seconds() -> int:
    return int(getattr(settings, "MEMORYHUB_EXPORT_TEMP_GRACE_SECONDS", 6 * 3600))


def jobs_mark_dead(now: Any = None) -> dict[str, int]:
    now = now or timezone.now()
    stale = Job.objects.filter(Q(heartbeat_at__lt=now - stale_after()) | Q(heartbeat_at__isnull=True),
                               state=JobState.RUNNING)
    dead = 0
    for job in stale:
        note = " Resume it to continue after the last committed batch." if job.kind in RESUMABLE else ""
        dead += Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
            state=JobState.FAILED, finished_at=now,
            message=f"The worker stopped (no heartbeat since {job.heartbeat_at or job.started_at}).{note}",
            result={**job.result, "resumable": job.kind in RESUMABLE})
    orphans = Job.objects.filter(state=JobState.QUEUED, created_at__lt=now - _queued_grace()).update(
        state=JobState.FAILED, finished_at=now, message="No worker ever picked this job up; start it again.")
    return {"dead": dead, "orphaned": orphans}


def export_temp_files_remove(roots: list[Path] | None = None) -> int:
    """Remove temporary export files and directories older than the grace period; return how many."""
    cutoff = time.time() - _temp_grace_seconds()
    # Walked by descriptor without following symlinks: a folder swapped for a link is never entered.
    return sum(remove_stale_temporaries(Location(root), cutoff)
               for root in (roots if roots is not None else portability_roots()))


def jobs_sweep() -> dict[str, int]:
    from banks.services.bank_removal import bank_deletions_resume
    from banks.services.vector_index_jobs import vector_index_jobs_queue

    dead = jobs_mark_dead()  # first, so a deletion whose worker died is seen as such and started again
    return {**dead, "temp_files": export_temp_files_remove(), "deletions_resumed": bank_deletions_resume(),
            "vector_index_jobs": vector_index_jobs_queue()}


def auto_resumes_allowed() -> int:
    return int(getattr(settings, "MEMORYHUB_JOB_AUTO_RESUMES", 3))


def jobs_to_resume(now: Any = None) -> list[Job]:
    """Jobs whose worker died (not those that failed on an error or were cancelled), not resumed yet,
    that died recently, and whose chain of automatic resumes is not used up (a line that kills the
    worker every time must not be retried forever)."""
    now = now or timezone.now()
    candidates = Job.objects.select_related("bank").filter(
        state=JobState.FAILED, kind__in=RESUMABLE, result__resumable=True, resumed_by__isnull=True,
        cancel_requested=False, bank__isnull=False, finished_at__gte=now - timedelta(hours=1)).order_by("pk")
    return [job for job in candidates if int(job.params.get("auto_resumes", 0)) < auto_resumes_allowed()]


def job_resume_params(job: Job, *, automatic: bool = False) -> dict[str, Any]:
    """The parameters of a job continuing a failed import or re-extraction after its last committed batch.

    ``automatic`` (the sweep's resume) counts the chain of automatic resumes; an operator's starts it again."""
    if job.kind not in RESUMABLE:
        raise Conflict(f"a {job.kind} job cannot be resumed; start it again")
    if job_is_stale(job):
        jobs_mark_dead()
        job.refresh_from_db()
    if job.state != JobState.FAILED:
        raise Conflict(f"job {job.pk} is {job.state}; only a failed or dead job can be resumed")
    chain = {"auto_resumes": int(job.params.get("auto_resumes", 0)) + 1} if automatic else {}
    params = {key: value for key, value in job.params.items() if key != "auto_resumes"}
    if job.kind == "reextract_entities":
        # The checkpoint is written in the same transaction as each batch.
        after = max(int(job.result.get("after_pk", 0) or 0), int(job.params.get("after_pk", 0)))
        return {**params, **chain, "after_pk": after, "resume_of": job.pk}
    if job.kind == "reembed":
        # Its counts carry the last primary key of the last committed batch.
        return {**params, "after_pk": int((job.counts or {}).get("after_pk", job.params.get("after_pk", 0))),
                **chain, "resume_of": job.pk}
    # Progress is written after each batch commits, so progress_done counts the records already handled.
    done = max(int(job.progress_done or 0), int(job.params.get("skip_records", 0)))
    return {**params, **chain, "skip_records": done, "resume_of": job.pk}
