"""Import, export and re-embedding on the worker. Each task takes a job id, reloads the job,
and calls the same services as the API and the commands."""

from __future__ import annotations

from celery import shared_task

from banks.models import Job
from portability.jobs import job_run, jobs_auto_resume
from portability.services.job_health import jobs_sweep


def _job(job_id: int) -> Job | None:
    job = Job.objects.select_related("bank").filter(pk=job_id).first()
    if job is None or job.bank is None or job.is_finished:
        return None
    return job


@shared_task(name="portability.run_job")
def run_job(job_id: int) -> None:
    job = _job(job_id)
    if job is not None:
        job_run(job)


@shared_task(name="portability.sweep_jobs")
def sweep_jobs() -> dict[str, int]:
    """Periodic (Celery beat, on a queue of its own): dead jobs failed and resumed, orphan queued jobs
    ended, stale export temp files removed, missing vector indexes queued as jobs."""
    counts = jobs_sweep()
    return {**counts, "resumed": jobs_auto_resume()}
