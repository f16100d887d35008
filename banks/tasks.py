"""Celery tasks of the domain: thin, take ids, reload rows, call services."""

from __future__ import annotations

from typing import TYPE_CHECKING

from celery import shared_task

if TYPE_CHECKING:
    from banks.models import Bank, Job


@shared_task(name="banks.ping")
def ping(value: str) -> str:
    """Round trip used by health checks and tests of the worker wiring."""
    from banks.models import AuditEvent

    AuditEvent.objects.create(actor="worker", action="worker.ping", details={"value": value})
    return value


@shared_task(name="banks.prune_access_log")
def prune_access_log() -> int:
    """Beat: the per-memory access log's rows older than MEMORYHUB_ACCESS_LOG_DAYS, a chunk at a time."""
    from banks.services.access_log import access_log_prune

    return access_log_prune()


@shared_task(name="banks.consolidate_observations")
def consolidate_observations(job_id: int) -> None:
    from banks.services.consolidation import observations_consolidate
    from banks.services.jobs import JobOutcome, job_execute, job_progress

    def work(job: Job, bank: Bank) -> JobOutcome:
        outcome = observations_consolidate(
            bank=bank, actor=job.created_by or "worker",
            progress=lambda done, total: job_progress(job=job, done=done, total=total),
        )
        counts = {"created": outcome.created, "updated": outcome.updated, "clusters": outcome.clusters,
                  "memories_scanned": outcome.memories_scanned}
        return counts, {**counts, "observation_ids": outcome.observation_ids}

    job_execute(job_id, work)


@shared_task(name="banks.reindex_search_language")
def reindex_search_language(job_id: int) -> None:
    """Re-compute a bank's full-text vectors in its (new) language, in batches."""
    from banks.services.jobs import JobOutcome, job_execute
    from banks.services.text_search import reindex_bank

    def work(job: Job, bank: Bank) -> JobOutcome:
        changed = reindex_bank(bank=bank, job=job)
        return {"reindexed": changed}, {"reindexed": changed}

    job_execute(job_id, work)


@shared_task(name="banks.rebuild_contexts")
def rebuild_contexts(job_id: int) -> None:
    """Recompute a bank's conversation sessions and contexts (and their vectors), in batches."""
    from banks.services.context_rebuild import contexts_rebuild_bank
    from banks.services.jobs import JobOutcome, job_execute

    def work(job: Job, bank: Bank) -> JobOutcome:
        counts = contexts_rebuild_bank(bank=bank, job=job)
        return counts, dict(counts)

    job_execute(job_id, work)


@shared_task(name="banks.lifecycle_sweep")
def lifecycle_sweep() -> list[int]:
    """Run every bank's lifecycle policy (scheduled by Celery beat); each run is its own job."""
    from banks.services.lifecycle import lifecycle_run_all

    return lifecycle_run_all()


@shared_task(name="banks.rescan_duplicates")
def rescan_duplicates() -> list[int]:
    """Incremental near-duplicate scans of the banks that changed since their last one (Celery beat)."""
    from banks.services.duplicate_scan import duplicates_rescan_all

    return duplicates_rescan_all()


@shared_task(name="banks.count_lexemes")
def count_lexemes() -> list[int]:
    """Count the frequent words of the big banks whose counts are missing or stale (Celery beat)."""
    from banks.services.text_statistics import bank_lexemes_refresh_all

    return bank_lexemes_refresh_all()


@shared_task(name="banks.index_tags")
def index_tags() -> list[int]:
    """Choose and build the vector indexes of the big tags of big banks that changed (Celery beat)."""
    from banks.services.tag_indexes import bank_tag_indexes_refresh_all

    return bank_tag_indexes_refresh_all()


@shared_task(name="banks.grow_vector_indexes")
def grow_vector_indexes() -> list[int]:
    """Move the banks of the shared vector graph that grew past the own-index size onto their own (Celery beat)."""
    from banks.services.vector_indexes import bank_vector_indexes_grow

    return bank_vector_indexes_grow()


@shared_task(name="banks.bulk_apply")
def bulk_apply_job(job_id: int) -> None:
    """A bulk action over a big selection (banks.services.bulk_jobs)."""
    from banks.services.bulk_jobs import bulk_job_work
    from banks.services.jobs import job_execute

    job_execute(job_id, bulk_job_work)


@shared_task(name="banks.find_duplicates")
def find_duplicates(job_id: int) -> None:
    """Scan a bank for near-duplicate pairs (banks.services.duplicate_scan)."""
    from banks.services.duplicate_scan import duplicates_scan
    from banks.services.jobs import JobOutcome, job_execute, job_progress

    def work(job: Job, bank: Bank) -> JobOutcome:
        outcome = duplicates_scan(
            bank=bank, threshold=float(job.params["threshold"]), full=bool(job.params.get("full")),
            progress=lambda done, total: job_progress(job=job, done=done, total=total),
        )
        return {"scanned": outcome.scanned, "pairs": outcome.pairs}, outcome.result()

    job_execute(job_id, work)


@shared_task(name="banks.complete_vector_index")
def complete_vector_index(job_id: int) -> None:
    """Fill a bank's missing vectors and build its own index (queued by the job sweep)."""
    from banks.services.jobs import job_execute
    from banks.services.vector_index_jobs import vector_index_job_work

    job_execute(job_id, vector_index_job_work)


@shared_task(name="banks.remove_bank")
def remove_bank(job_id: int) -> None:
    """Delete a hidden bank's rows in chunks (banks.services.bank_removal)."""
    from banks.models import Job
    from banks.services.bank_removal import bank_removal_run
    from banks.services.jobs import JobCancelled, job_fail, job_finish, job_pulse, job_start

    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.is_finished:
        return
    try:
        try:
            job = job_start(job=job)
        except JobCancelled:
            pass  # a deletion is not undone: the bank is already gone for every client
        with job_pulse(job.pk, cancellable=False):
            counts = bank_removal_run(job)
    except Exception as exc:
        job_fail(job=job, message=f"{exc.__class__.__name__}: {exc}; the deletion is taken up again by the job sweep")
        raise
    job_finish(job=job, counts=counts, result={"bank_id": job.params.get("bank_id"), "deleted": True, **counts})
