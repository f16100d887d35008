"""Jobs: long work on the Celery worker, with progress an operator can watch and cancel.

The row is the truth: a worker updates it as it goes, a page polls it, a cancel
request is a flag the worker checks between batches. A job whose worker died is
noticed by its stale heartbeat.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.utils import timezone

from banks.models import Bank, Job, JobState
from banks.services.audit import audit_record
from memoryhub.errors import Conflict
from memoryhub.queue import enqueue_after_commit

MAX_ERRORS_KEPT = 1000
STALE_AFTER = timedelta(minutes=5)


class JobCancelled(Exception):
    pass


def job_create(*, kind: str, actor: str, bank: Bank | None = None, params: dict[str, Any] | None = None,
               total: int | None = None) -> Job:
    job = Job.objects.create(kind=kind, bank=bank, created_by=actor, params=params or {}, progress_total=total)
    audit_record(actor=actor, action=f"job.{kind}", bank=bank, target_ids=[str(job.pk)], details=params or {})
    return job


def job_enqueue(*, job: Job, send: Callable[[], object]) -> Job:
    """Queue the job's task once its row is committed. A broker that refuses fails the row at once
    (a 503 for the caller), so it never sits ``queued`` with nothing to run it."""
    enqueue_after_commit(send, what=f"{job.kind} job {job.pk}",
                         on_refused=lambda message: job_fail(job=job, message=message))
    return job


def job_start(*, job: Job) -> Job:
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(state=JobState.RUNNING, started_at=now, heartbeat_at=now)
    job.refresh_from_db()
    if job.cancel_requested:
        raise JobCancelled
    return job


def job_progress(*, job: Job, done: int, total: int | None = None, counts: dict[str, int] | None = None,
                 errors: list[dict[str, Any]] | None = None) -> None:
    """Record progress; raises JobCancelled when an operator asked to stop."""
    changes: dict[str, Any] = {"progress_done": done, "heartbeat_at": timezone.now()}
    if total is not None:
        changes["progress_total"] = total
    if counts is not None:
        changes["counts"] = counts
    if errors is not None:
        changes["errors"] = errors[:MAX_ERRORS_KEPT]
    Job.objects.filter(pk=job.pk).update(**changes)
    if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
        raise JobCancelled


def job_finish(*, job: Job, result: dict[str, Any] | None = None, counts: dict[str, int] | None = None,
               errors: list[dict[str, Any]] | None = None, message: str = "") -> Job:
    changes: dict[str, Any] = {"state": JobState.SUCCEEDED, "finished_at": timezone.now(), "result": result or {},
                               "message": message}
    if counts is not None:
        changes["counts"] = counts
    if errors is not None:
        changes["errors"] = errors[:MAX_ERRORS_KEPT]
    Job.objects.filter(pk=job.pk).update(**changes)
    job.refresh_from_db()
    return job


def job_fail(*, job: Job, message: str, cancelled: bool = False) -> Job:
    Job.objects.filter(pk=job.pk).update(state=JobState.CANCELLED if cancelled else JobState.FAILED,
                                         finished_at=timezone.now(), message=message[:5000])
    job.refresh_from_db()
    return job


def job_cancel_request(*, job: Job, actor: str) -> Job:
    if job.is_finished:
        raise Conflict(f"job {job.pk} has already finished ({job.state})")
    Job.objects.filter(pk=job.pk).update(cancel_requested=True)
    if job_is_stale(job):
        # Its worker is gone: nobody will see the flag, so the job ends now.
        Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
            state=JobState.CANCELLED, finished_at=timezone.now(), message="cancelled; its worker had stopped")
    if job.state == JobState.QUEUED:
        # Never picked up: nothing runs, so it is cancelled at once.
        Job.objects.filter(pk=job.pk, state=JobState.QUEUED).update(state=JobState.CANCELLED,
                                                                     finished_at=timezone.now())
    audit_record(actor=actor, action="job.cancel", bank=job.bank, target_ids=[str(job.pk)])
    job.refresh_from_db()
    return job


def job_is_stale(job: Job) -> bool:
    return job.state == JobState.RUNNING and (job.heartbeat_at is None or
                                              timezone.now() - job.heartbeat_at > STALE_AFTER)


__all__ = ["JobCancelled", "job_cancel_request", "job_create", "job_enqueue", "job_fail", "job_finish",
           "job_is_stale", "job_progress", "job_start"]


# What a bank job's work returns: the counts shown while and after it runs, and its result.
JobOutcome = tuple[dict[str, int], dict[str, Any]]


def job_execute(job_id: int, work: Callable[[Job, Bank], JobOutcome]) -> None:
    """Run a queued bank job on the worker: start it, do ``work``, finish or fail the row.

    A job that is gone, finished or whose bank is gone is passed over (a redelivered task).
    An operator's cancel fails it as cancelled; any other error fails it with its message
    and is raised again so the worker logs it.
    """
    job = Job.objects.select_related("bank").filter(pk=job_id).first()
    if job is None or job.bank is None or job.is_finished:
        return
    bank = job.bank
    try:
        job = job_start(job=job)
        counts, result = work(job, bank)
    except JobCancelled:
        job_fail(job=job, message="cancelled by an operator", cancelled=True)
        return
    except Exception as exc:
        job_fail(job=job, message=f"{exc.__class__.__name__}: {exc}")
        raise
    job_finish(job=job, counts=counts, result=result)
