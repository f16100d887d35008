"""Celery tasks of the domain: thin, take ids, reload rows, call services."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="banks.ping")
def ping(value: str) -> str:
    """Round trip used by health checks and tests of the worker wiring."""
    from banks.models import AuditEvent

    AuditEvent.objects.create(actor="worker", action="worker.ping", details={"value": value})
    return value


@shared_task(name="banks.consolidate_observations")
def consolidate_observations(job_id: int) -> None:
    from banks.models import Job
    from banks.services.consolidation import observations_consolidate
    from banks.services.jobs import JobCancelled, job_fail, job_finish, job_progress, job_start

    job = Job.objects.select_related("bank").filter(pk=job_id).first()
    if job is None or job.bank is None or job.is_finished:
        return
    bank = job.bank
    try:
        job = job_start(job=job)
        outcome = observations_consolidate(
            bank=bank, actor=job.created_by or "worker",
            progress=lambda done, total: job_progress(job=job, done=done, total=total),
        )
    except JobCancelled:
        job_fail(job=job, message="cancelled by an operator", cancelled=True)
        return
    except Exception as exc:
        job_fail(job=job, message=f"{exc.__class__.__name__}: {exc}")
        raise
    counts = {"created": outcome.created, "updated": outcome.updated, "clusters": outcome.clusters,
              "memories_scanned": outcome.memories_scanned}
    job_finish(job=job, counts=counts, result={**counts, "observation_ids": outcome.observation_ids})


@shared_task(name="banks.reindex_search_language")
def reindex_search_language(job_id: int) -> None:
    """Re-compute a bank's full-text vectors in its (new) language, in batches."""
    from banks.models import Job
    from banks.services.jobs import JobCancelled, job_fail, job_finish, job_start
    from banks.services.text_search import reindex_bank

    job = Job.objects.select_related("bank").filter(pk=job_id).first()
    if job is None or job.bank is None or job.is_finished:
        return
    bank = job.bank
    try:
        job = job_start(job=job)
        changed = reindex_bank(bank=bank, job=job)
    except JobCancelled:
        job_fail(job=job, message="cancelled by an operator", cancelled=True)
        return
    except Exception as exc:
        job_fail(job=job, message=f"{exc.__class__.__name__}: {exc}")
        raise
    job_finish(job=job, counts={"reindexed": changed}, result={"reindexed": changed})


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


@shared_task(name="banks.find_duplicates")
def find_duplicates(job_id: int) -> None:
    """Scan a bank for near-duplicate pairs (banks.services.duplicate_scan)."""
    from banks.models import Job
    from banks.services.duplicate_scan import duplicates_scan
    from banks.services.jobs import JobCancelled, job_fail, job_finish, job_progress, job_start

    job = Job.objects.select_related("bank").filter(pk=job_id).first()
    if job is None or job.bank is None or job.is_finished:
        return
    bank = job.bank
    try:
        job = job_start(job=job)
        outcome = duplicates_scan(
            bank=bank, threshold=float(job.params["threshold"]), full=bool(job.params.get("full")),
            progress=lambda done, total: job_progress(job=job, done=done, total=total),
        )
    except JobCancelled:
        job_fail(job=job, message="cancelled by an operator", cancelled=True)
        return
    except Exception as exc:
        job_fail(job=job, message=f"{exc.__class__.__name__}: {exc}")
        raise
    job_finish(job=job, counts={"scanned": outcome.scanned, "pairs": outcome.pairs}, result=outcome.result())


@shared_task(name="banks.remove_bank")
def remove_bank(job_id: int) -> None:
    """Delete a hidden bank's rows in chunks (banks.services.bank_removal)."""
    from banks.models import Job
    from banks.services.bank_removal import bank_removal_run
    from banks.services.jobs import JobCancelled, job_fail, job_finish, job_start

    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.is_finished:
        return
    try:
        try:
            job = job_start(job=job)
        except JobCancelled:
            pass  # a deletion is not undone: the bank is already gone for every client
        counts = bank_removal_run(job)
    except Exception as exc:
        job_fail(job=job, message=f"{exc.__class__.__name__}: {exc}; the deletion is taken up again by the job sweep")
        raise
    job_finish(job=job, counts=counts, result={"bank_id": job.params.get("bank_id"), "deleted": True, **counts})
