"""Jobs: long work on the Celery worker, with progress an operator can watch and cancel.

The row is the truth: a worker updates it as it goes, a page polls it, a cancel
request is a flag the worker checks between batches. A job whose worker died is
noticed by its stale heartbeat.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from banks.models import Bank, Job, JobState
from banks.services.audit import audit_record
from banks.services.job_pulse import (
    JobCancelled,
    job_check,
    job_note,
    job_phase,
    job_pulse,
    job_was_stopped,
    noted_progress,
)
from memoryhub.errors import Conflict
from memoryhub.queue import enqueue_after_commit

MAX_ERRORS_KEPT = 1000


def stale_after() -> timedelta:
    """A running job whose heartbeat is older than this has lost its worker. Every job beats from its
    pulse (banks.services.job_pulse) every few seconds whatever phase it is in, so this can be short."""
    return timedelta(seconds=int(getattr(settings, "MEMORYHUB_JOB_STALE_SECONDS", 45)))


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
    # The pulse writes its notes too: it must not put older numbers back.
    job_note_quietly(job, done=done, total=total, counts=counts)
    job_check(job)


def job_note_quietly(job: Job, **notes: Any) -> None:
    try:
        job_note(job, **notes)
    except JobCancelled:
        pass  # job_check, right after, raises it where the caller expects it


def job_finish(*, job: Job, result: dict[str, Any] | None = None, counts: dict[str, int] | None = None,
               errors: list[dict[str, Any]] | None = None, message: str = "") -> Job:
    changes: dict[str, Any] = {**noted_progress(job.pk), "state": JobState.SUCCEEDED, "finished_at": timezone.now(),
                               "result": result or {}, "message": message}
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
                                              timezone.now() - job.heartbeat_at > stale_after())


def job_stopped_cleanly(job: Job, exc: BaseException) -> bool:
    """After ``exc`` ended a job's work: if its pulse ended the work (an ignored cancel), the job is
    cancelled and its connection, whose session was ended, is dropped. True when that was the case."""
    if isinstance(exc, JobCancelled):
        return True
    if not job_was_stopped(job.pk):
        return False
    connection.close()
    return True


__all__ = ["JobCancelled", "job_cancel_request", "job_check", "job_create", "job_enqueue", "job_fail",
           "job_finish", "job_is_stale", "job_note", "job_phase", "job_progress", "job_pulse", "job_start",
           "job_stopped_cleanly", "stale_after"]


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
        with job_pulse(job.pk):
            counts, result = work(job, bank)
    except Exception as exc:
        if job_stopped_cleanly(job, exc):
            job_fail(job=job, message="cancelled by an operator", cancelled=True)
            return
        job_fail(job=job, message=f"{exc.__class__.__name__}: {exc}")
        raise
    job_finish(job=job, counts=counts, result=result)
