"""Completing a bank's own vector index as a job of its own, never inside the periodic sweep.

An import killed after loading leaves a bank on its own index with vectors missing and no index: its
semantic recall is exact (slow) until someone fills and builds. The sweep only notices and queues a
``vector_index`` job per such bank; the job runs the fill and the build as two phases on an ordinary
worker, with the heartbeat and cancel every job has. A bank whose import is queued, running or about
to be resumed gets no such job: the import fills and builds when it ends.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from django.db.models import Q
from django.utils import timezone

from banks.models import Bank, Job, JobState
from banks.services.jobs import job_create, job_enqueue, job_phase, job_progress
from banks.services.vector_indexes import bank_vector_index_complete, bank_vector_indexes_missing
from memoryhub.queue import send_task

KIND = "vector_index"
RETRY_AFTER = timedelta(hours=1)


def _busy(bank: Bank) -> bool:
    unfinished = Q(state__in=[JobState.QUEUED, JobState.RUNNING])
    to_resume = Q(state=JobState.FAILED, kind="import", result__resumable=True, resumed_by__isnull=True)
    # One that failed lately is not queued again every sweep: an operator reads why on its page first.
    failed_lately = Q(kind=KIND, state=JobState.FAILED, finished_at__gte=timezone.now() - RETRY_AFTER)
    return Job.objects.filter(Q(kind__in=[KIND, "import", "reembed"]) & unfinished | to_resume | failed_lately,
                              bank=bank).exists()


def vector_index_jobs_queue() -> int:
    """Queue a completion job for every bank whose index is missing and that nothing else will build."""
    queued = 0
    for bank in bank_vector_indexes_missing():
        if _busy(bank):
            continue
        job = job_create(kind=KIND, actor="system:sweep", bank=bank, params={"bank_id": bank.bank_id})
        job_enqueue(job=job, send=partial(send_task, "banks.complete_vector_index", job.pk))
        queued += 1
    return queued


def vector_index_job_work(job: Job, bank: Bank) -> tuple[dict[str, int], dict[str, int]]:
    """The worker's side: fill the missing vectors, then build the index, each a phase."""
    counts = bank_vector_index_complete(
        bank, phase=lambda name: job_phase(job, name),
        alive=lambda: job_progress(job=job, done=0))
    return counts, counts


__all__ = ["KIND", "vector_index_job_work", "vector_index_jobs_queue"]
