"""Running import, export, re-embed and entity re-extraction jobs: progress, cancellation, final counts
on the Job row. Imports and re-extractions can be resumed after their last committed batch."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from banks.models import Bank, Job, JobState, Memory
from banks.providers import bank_embedder
from banks.services.audit import audit_record
from banks.services.entity_reextract import DEFAULT_BATCH, ReextractReport, entities_reextract
from banks.services.jobs import (
    job_create,
    job_enqueue,
    job_fail,
    job_finish,
    job_note,
    job_phase,
    job_progress,
    job_pulse,
    job_start,
    job_stopped_cleanly,
)
from banks.services.memory_rows import rows_reembed
from banks.services.vector_indexes import bank_vector_index_build
from banks.turn_context import embedding_text
from banks.vectors import vector_literal
from memoryhub.errors import Conflict, MemoryHubError
from memoryhub.queue import send_task
from portability.formats.registry import max_decompressed_bytes, open_archive
from portability.roots import stored_location
from portability.services import archive_export, archive_import
from portability.services.bank_archive import bank_archive_export, bank_archive_import, is_bank_archive
from portability.services.exporter import archive_export_as
from portability.services.job_health import job_resume_params, jobs_to_resume

KINDS = ("import", "export", "reembed", "reextract_entities")


def job_start_async(*, kind: str, bank: Bank, actor: str, params: dict[str, Any]) -> Job:
    """Create the job row and queue it once the row is committed (503, job failed, if the broker refuses)."""
    job = job_create(kind=kind, actor=actor, bank=bank, params=params)
    return job_enqueue(job=job, send=lambda: send_task("portability.run_job", job.pk))


def job_resume(*, job: Job, actor: str, automatic: bool = False) -> Job:
    """Start a new job that continues a failed or dead import after its last committed batch.

    Once per failed job: the failed row is locked while its continuation is created, so two resumes
    (an operator's double click, the sweep and an operator) start one job; the second hears 409 with
    the id of the one that runs.
    """
    params = job_resume_params(job, automatic=automatic)
    with transaction.atomic():
        locked = Job.objects.select_for_update().get(pk=job.pk)
        if locked.resumed_by is not None:
            raise Conflict(f"job {job.pk} was already resumed by job {locked.resumed_by}",
                           job_id=locked.resumed_by)
        resumed = job_start_async(kind=job.kind, bank=_bank(job), actor=actor, params=params)
        Job.objects.filter(pk=job.pk).update(resumed_by=resumed.pk)
        audit_record(actor=actor, action="job.resume", bank=job.bank, target_ids=[str(job.pk), str(resumed.pk)])
    job.resumed_by = resumed.pk
    return resumed


def jobs_auto_resume() -> int:
    """Resume every job whose worker died (the periodic sweep, right after it marked them): no operator
    needed for a killed worker. Each is resumed once (``job_resume``'s lock)."""
    resumed = 0
    for job in jobs_to_resume():
        try:
            job_resume(job=job, actor="system:sweep", automatic=True)
        except Conflict:
            continue  # resumed meanwhile by an operator
        resumed += 1
    return resumed


def entities_reextract_start(*, bank: Bank, actor: str, batch: int = DEFAULT_BATCH) -> Job:
    """Queue a re-extraction of the bank's entities; one at a time per bank (two would fight over mentions)."""
    if not 1 <= batch <= 5000:
        raise MemoryHubError("batch must be between 1 and 5000")
    running = Job.objects.filter(bank=bank, kind="reextract_entities",
                                 state__in=[JobState.QUEUED, JobState.RUNNING]).first()
    if running is not None:
        raise Conflict(f"entities of bank {bank.bank_id} are already being re-extracted (job {running.pk})")
    return job_start_async(kind="reextract_entities", bank=bank, actor=actor, params={"batch": batch})


def _bank(job: Job) -> Bank:
    if job.bank is None:
        # The bank was deleted after the job was queued (the foreign key is SET_NULL).
        raise MemoryHubError("the job's bank no longer exists")
    return job.bank


def _restore(job: Job) -> None:
    """A whole-bank archive restored as a job: one transaction, so a killed restore leaves the bank empty
    and a resumed one starts again from the top."""
    path = stored_location(job.params["path"])
    dry_run = bool(job.params.get("dry_run"))
    job_phase(job, "previewing" if dry_run else "restoring")
    # A preview restores every row and rolls back: it counts exactly what the restore will write.
    counts = bank_archive_import(bank=_bank(job), path=path, actor=job.created_by, max_bytes=max_decompressed_bytes(),
                                 progress=lambda lines: job_note(job, done=lines), dry_run=dry_run)
    job_finish(job=job, counts=counts, result={"imported": counts.get("memory", 0), "skipped": 0, "errors": 0,
                                               "format": "mhba", "counts": counts, "dry_run": dry_run})


def _import(job: Job) -> None:
    params = job.params
    path = stored_location(params["path"])
    if is_bank_archive(path, params.get("format")):
        _restore(job)  # all or nothing by construction: strict holds; a preview rolls back
        return
    fmt, header, records = open_archive(path, params.get("format"))
    total = header.memory_count if isinstance(header.memory_count, int) else None
    report = archive_import(
        bank=_bank(job), records=records, actor=job.created_by, on_conflict=params.get("on_conflict", "skip"),
        dry_run=params.get("dry_run", False), strict=params.get("strict", False),
        skip_records=int(params.get("skip_records", 0)), expected=total,
        source_label=f"import:{fmt}:{header.provider or path.name}",
        progress=lambda r: job_progress(job=job, done=r.lines, total=max(total or 0, r.lines) or None,
                                        counts=r.counts(), errors=r.errors),
        phase=lambda name: job_phase(job, name),
    )
    if report.aborted:
        job_progress(job=job, done=report.lines, total=report.lines or None, counts=report.counts(),
                     errors=report.errors)
        job_fail(job=job, message=report.aborted)
        return
    job_finish(job=job, counts=report.counts(), errors=report.errors,
               result={**report.astrocyte_result(), "format": fmt}, message="")


def _export(job: Job) -> None:
    params = job.params
    dest = stored_location(params["path"], bank_id=_bank(job).bank_id)
    job_phase(job, "writing")
    if params.get("full"):
        counts = bank_archive_export(bank=_bank(job), dest=dest, actor=job.created_by,
                                     progress=lambda lines: job_note(job, done=lines))
        job_finish(job=job, counts={"exported": counts.get("memory", 0)}, result={
            "path": str(dest.path), "exported_count": counts.get("memory", 0), "full": True, "counts": counts})
        return
    if params.get("format", "ama") != "ama":
        report = archive_export_as(bank=_bank(job), dest=dest, fmt=params["format"], actor=job.created_by)
        job_finish(job=job, counts={"exported": report.exported_count}, result={
            "path": report.path, "exported_count": report.exported_count, "format": params["format"]})
        return
    report = archive_export(
        bank=_bank(job), dest=dest, actor=job.created_by, include_embeddings=params.get("include_embeddings", False),
        include_entities=params.get("include_entities", True),
        include_observations=params.get("include_observations", True),
        # Called while the export's COPY streams on this connection: noted for the pulse, never written here.
        progress=lambda done, total: job_note(job, done=done, total=total),
    )
    job_finish(job=job, counts={"exported": report.exported_count}, result={
        "path": report.path, "exported_count": report.exported_count})


def reembed_bank(*, bank: Bank, job: Job | None = None, batch: int = 500, after_pk: int = 0) -> int:
    """Re-embed every memory with the bank's current embedder (after a provider change).

    A batch at a time in primary-key order, each batch its own transaction; the job's counts carry
    the last primary key done (``after_pk``), so a resumed job continues after it.
    """
    embedder = bank_embedder(bank)
    total = Memory.objects.filter(bank=bank, pk__gt=after_pk).count()
    if job is not None:
        job_phase(job, "re-embedding", total=total)
    done, last_pk = 0, after_pk
    while True:
        rows = list(Memory.objects.filter(bank=bank, pk__gt=last_pk).order_by("pk")
                    .only("pk", "text", "context")[:batch])
        if not rows:
            break
        # A conversation turn's vector is made from its text and its context (banks.turn_context).
        vectors = embedder.embed([embedding_text(m.text, m.context) for m in rows])
        with transaction.atomic():
            rows_reembed(bank.pk, [m.pk for m in rows], [vector_literal(v) for v in vectors], embedder.name,
                         embedder.dimensions)
        done += len(rows)
        last_pk = rows[-1].pk
        if job is not None:
            job_progress(job=job, done=done, total=total, counts={"reembedded": done, "after_pk": last_pk})
    # A bank on its own vector index needs it rebuilt when the new vectors have another size.
    if job is not None:
        job_phase(job, "building index")
    bank_vector_index_build(bank)
    return done


def _reembed(job: Job) -> None:
    done = reembed_bank(bank=_bank(job), job=job, after_pk=int(job.params.get("after_pk", 0)))
    job_finish(job=job, counts={"reembedded": done}, result={"reembedded": done})


def _reextract(job: Job) -> None:
    def checkpoint(report: ReextractReport) -> None:
        # Inside the batch's transaction: the resume point never runs ahead of what is committed.
        Job.objects.filter(pk=job.pk).update(result={**report.counts(), "after_pk": report.after_pk},
                                             counts=report.counts())

    report = entities_reextract(
        bank=_bank(job), after_pk=int(job.params.get("after_pk", 0)),
        batch=int(job.params.get("batch", DEFAULT_BATCH)), checkpoint=checkpoint,
        progress=lambda r, total: job_progress(job=job, done=r.memories, total=total, counts=r.counts()),
        alive=lambda: job_note(job))
    audit_record(actor=job.created_by, action="bank.entities.reextract", bank=job.bank,
                 details={"job": job.pk, **report.counts()})
    job_finish(job=job, counts=report.counts(), result={**report.counts(), "after_pk": report.after_pk})


def job_run(job: Job) -> None:
    runners = {"import": _import, "export": _export, "reembed": _reembed, "reextract_entities": _reextract}
    try:
        job = job_start(job=job)
        with job_pulse(job.pk):
            runners[job.kind](job)
    except Exception as exc:  # the job row must say what went wrong, whatever it was
        if job_stopped_cleanly(job, exc):
            job_fail(job=job, message="cancelled by an operator", cancelled=True)
            return
        message = getattr(exc, "message", None) or str(exc) or exc.__class__.__name__
        if isinstance(exc, OSError) and exc.strerror:
            message = exc.strerror  # str(exc) would name the server's absolute path
        job_fail(job=job, message=f"{exc.__class__.__name__}: {message}")
        if not isinstance(exc, ValueError | OSError | MemoryHubError):
            raise


__all__ = ["KINDS", "entities_reextract_start", "job_resume", "job_run", "job_start_async", "jobs_auto_resume",
           "reembed_bank"]
