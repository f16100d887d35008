"""Starting consolidation as a job (the API, the UI and the command share this)."""

from __future__ import annotations

from banks.models import Bank, Job, JobState
from banks.services.jobs import job_create, job_enqueue
from memoryhub.errors import Conflict
from memoryhub.queue import send_task


def consolidation_start(*, bank: Bank, actor: str) -> Job:
    """Queue a consolidation of the bank; one at a time per bank."""
    running = Job.objects.filter(bank=bank, kind="consolidation",
                                 state__in=[JobState.QUEUED, JobState.RUNNING]).first()
    if running is not None:
        raise Conflict(f"a consolidation of bank '{bank.bank_id}' is already {running.state} (job {running.pk})",
                       job_id=running.pk)
    job = job_create(kind="consolidation", actor=actor, bank=bank)
    return job_enqueue(job=job, send=lambda: send_task("banks.consolidate_observations", job.pk))
