"""A bank's full-text language: re-indexing its memories when it changes.

The language lives in ``bank.config["recall"]["language"]`` (banks.text_search); new rows take it
from the bank through a database trigger, existing rows keep the configuration they were indexed
with until re-computed here. Setting ``search_config`` makes PostgreSQL recompute the generated
``search_vector`` (and its GIN entries) of that row. A small bank is re-computed at once, inside
the request; a larger one by a job in batches, each its own short transaction.
"""

from __future__ import annotations

from django.db import connection, transaction

from banks.models import Bank, Job, JobState
from banks.services.jobs import job_create, job_enqueue, job_progress
from banks.services.memory_rows import rows_search_config_apply
from banks.text_search import REINDEX_JOB_KIND, bank_language, config_name
from memoryhub.queue import send_task

# Rows re-computed inside the request that changed the language; past it, a job does the work.
INLINE_ROWS = 2000
BATCH_ROWS = 2000
JOB_KIND = REINDEX_JOB_KIND


def _stale_rows(bank: Bank, target: str, cap: int) -> int:
    """Rows of the bank indexed with another configuration, counted up to ``cap``."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM (SELECT 1 FROM banks_memory WHERE bank_id = %s "
                       "AND search_config <> %s::regconfig LIMIT %s) s", [bank.pk, target, cap])
        return int(cursor.fetchone()[0])


def reindex_batch(bank: Bank, after_pk: int, batch: int = BATCH_ROWS) -> tuple[int, int | None]:
    """Re-compute the next ``batch`` rows (by pk) after ``after_pk`` in the bank's current language.

    Returns (rows changed, last pk looked at or None when the bank is done)."""
    bank.refresh_from_db(fields=["config"])
    target = config_name(bank_language(bank.config))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT max(id) FROM (SELECT id FROM banks_memory WHERE bank_id = %s AND id > %s "
                       "ORDER BY id LIMIT %s) s", [bank.pk, after_pk, batch])
        last = cursor.fetchone()[0]
        if last is None:
            return 0, None
        return rows_search_config_apply(bank.pk, after_pk, int(last), target), int(last)


def reindex_bank(*, bank: Bank, job: Job | None = None, batch: int = BATCH_ROWS) -> int:
    """Re-compute every row of the bank not yet in its language; returns how many changed."""
    total = _stale_rows(bank, config_name(bank_language(bank.config)), 10**9) if job is not None else None
    changed, last_pk = 0, 0
    while True:
        done, last = reindex_batch(bank, last_pk, batch)
        if last is None:
            # The language may have changed again behind the cursor: one more pass then.
            if _stale_rows(bank, config_name(bank_language(bank.config)), 1) == 0:
                return changed
            last_pk = 0
            continue
        changed += done
        last_pk = last
        if job is not None:
            job_progress(job=job, done=changed, total=max(total or 0, changed))


def search_language_apply(*, bank: Bank, actor: str) -> Job | None:
    """After the bank's language changed: re-compute its rows now when few, else queue a job (returned)."""
    target = config_name(bank_language(bank.config))
    stale = _stale_rows(bank, target, INLINE_ROWS + 1)
    if stale == 0:
        return None
    if stale <= INLINE_ROWS:
        reindex_bank(bank=bank)
        return None
    running = Job.objects.filter(bank=bank, kind=JOB_KIND, state__in=[JobState.QUEUED, JobState.RUNNING]).first()
    if running is not None:
        return running  # it reads the bank's language at every batch, so it ends in the new one
    job = job_create(kind=JOB_KIND, actor=actor, bank=bank, params={"language": bank_language(bank.config)})
    return job_enqueue(job=job, send=lambda: send_task("banks.reindex_search_language", job.pk))
