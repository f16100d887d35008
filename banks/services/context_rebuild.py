"""Rebuilding a bank's conversation sessions and contexts: a job, in batches, with progress.

Needed for rows stored before conversation contexts existed and after a bank's context window
(``config.recall.context_turns``) changes: ``bank_update`` starts it on such a change, and
``manage.py rebuild_contexts`` runs it for one bank or all. The row work is the owner's
(``memory_rows.rows_contexts_rebuild``, one short transaction per batch); this walks the bank, records
progress after each batch and stops between batches when an operator cancels.
"""

from __future__ import annotations

from banks.models import Bank, Job, JobState
from banks.services.jobs import job_create, job_enqueue, job_progress
from banks.services.memory_rows import rows_contexts_rebuild
from banks.turn_context import REBUILD_JOB_KIND, context_turns
from memoryhub.queue import send_task

BATCH_ROWS = 1000
JOB_KIND = REBUILD_JOB_KIND


def contexts_rebuild_bank(*, bank: Bank, job: Job | None = None, batch: int = BATCH_ROWS) -> dict[str, int]:
    """Rebuild every row of ``bank``; returns the rows looked at and the contexts written (a turn
    whose predecessor has a higher id is written twice: once from each)."""
    total = bank.memories.count() if job is not None else None
    seen = changed = 0
    last_pk = 0
    while True:
        bank.refresh_from_db(fields=["config"])  # a window changed meanwhile applies from the next batch
        looked, moved, last = rows_contexts_rebuild(bank=bank, after_pk=last_pk, batch=batch)
        if last is None:
            return {"rows": seen, "contexts_written": changed}
        seen, changed, last_pk = seen + looked, changed + moved, last
        if job is not None:
            job_progress(job=job, done=seen, total=max(total or 0, seen),
                         counts={"rows": seen, "contexts_written": changed})


def contexts_rebuild_start(*, bank: Bank, actor: str) -> Job:
    """Queue a rebuild of ``bank`` (returned). One still queued is returned instead: it reads the bank's
    window when it runs. A running one may have passed rows under the old window, so a new one follows."""
    queued = Job.objects.filter(bank=bank, kind=JOB_KIND, state=JobState.QUEUED).order_by("-pk").first()
    if queued is not None:
        return queued
    job = job_create(kind=JOB_KIND, actor=actor, bank=bank, params={"context_turns": context_turns(bank.config)})
    return job_enqueue(job=job, send=lambda: send_task("banks.rebuild_contexts", job.pk))


__all__ = ["contexts_rebuild_bank", "contexts_rebuild_start"]
