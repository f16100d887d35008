"""/v1/export and /v1/import (Astrocyte's bodies and answers, plus our options) and /v1/jobs."""

from __future__ import annotations

from typing import Literal

from django.conf import settings
from pydantic import Field
from rest_framework.request import Request
from rest_framework.response import Response

from banks.api.base import BankApiView, ok
from banks.api.wire import WireModel
from banks.models import Job
from banks.selectors.bank_jobs import bank_deletion_job
from banks.services.jobs import job_cancel_request
from memoryhub.errors import BankNotFound, NotFound, TooLargeForRequest, Unprocessable
from portability.formats.ama import AmaCountMismatch
from portability.formats.compression import ArchiveTooLarge
from portability.formats.registry import open_archive
from portability.jobs import entities_reextract_start, job_resume, job_start_async
from portability.paths import Location, PathNotAllowed
from portability.roots import bank_location, refused
from portability.services import archive_export, archive_import
from portability.services.bank_archive import bank_archive_export, bank_archive_import, is_bank_archive
from portability.services.exporter import archive_export_as


class ExportRequest(WireModel):
    raw_fields = frozenset({"path"})
    bank_id: str
    path: str
    include_embeddings: bool = False
    include_entities: bool = True
    include_observations: bool = True
    # The whole bank (.mhba.jsonl): memories as AMA lines plus everything else the bank holds.
    full: bool = False
    # Another writer than AMA (the include_* options are AMA's); Markdown writes a directory at ``path``.
    format: Literal["ama", "csv", "markdown", "amplihack", "agentos_json"] = "ama"
    run_async: bool = Field(default=False, alias="async")


class ImportRequest(WireModel):
    raw_fields = frozenset({"path"})
    bank_id: str
    path: str
    on_conflict: Literal["skip", "overwrite", "error"] = "skip"
    format: str | None = None
    dry_run: bool = False
    strict: bool = False
    run_async: bool = Field(default=False, alias="async")


class JobQuery(WireModel):
    bank_id: str


class ReextractRequest(WireModel):
    batch: int = Field(default=200, ge=1, le=5000)


def job_body(job: Job) -> dict:
    return {"job_id": job.pk, "kind": job.kind, "state": job.state, "bank_id": job.bank.bank_id if job.bank else job.params.get("bank_id"),
            "progress": {"done": job.progress_done, "total": job.progress_total, "percent": job.percent},
            "counts": job.counts, "errors": job.errors[:100], "result": job.result, "message": job.message,
            "created_at": job.created_at.isoformat(), "started_at": job.started_at.isoformat() if job.started_at
            else None, "finished_at": job.finished_at.isoformat() if job.finished_at else None,
            "cancel_requested": job.cancel_requested}


def _failed(exc: Exception, where: Location) -> Unprocessable:
    """A failed write as a 422 naming the path relative to its root: an OSError's own text would name
    the server's absolute path."""
    if isinstance(exc, PathNotAllowed):
        return refused(exc)
    if isinstance(exc, OSError):
        return Unprocessable(f"export to {where.shown} failed: {exc.strerror or exc.__class__.__name__}")
    return Unprocessable(f"export failed: {exc}")


ASYNC_HINT = 'send "async": true to run it as a job (202, then follow /v1/jobs/{job_id})'


def _too_big_to_export(bank_memories: int, what: str) -> None:
    limit = settings.MEMORYHUB_SYNC_EXPORT_MAX_MEMORIES
    if bank_memories > limit:
        raise TooLargeForRequest(f"{what} of {bank_memories} memories is over the {limit} done inside a request; "
                                 f"{ASYNC_HINT}", limit=limit)


def _too_big_to_import(source: Location, lines: int | None, *, cap: int | None = None) -> None:
    """Refuse before reading further: an archive whose header counts more lines than a request may
    import, or (without a count) a file bigger than ``cap`` (by default a kibibyte per line allowed)."""
    limit = settings.MEMORYHUB_SYNC_IMPORT_MAX_LINES
    if lines is not None and lines > limit:
        raise TooLargeForRequest(f"{source.shown} holds {lines} memories, over the {limit} imported inside a "
                                 f"request; {ASYNC_HINT}", limit=limit)
    size, cap = source.stat().st_size, cap or limit * 1024
    if lines is None and size > cap:
        raise TooLargeForRequest(f"{source.shown} is {size} bytes, over the {cap} read inside a request; "
                                 f"{ASYNC_HINT}", limit=cap)


class ExportApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, ExportRequest)
        bank = self.bank(request, body.bank_id, "admin")
        dest = bank_location(self.principal(request), bank.bank_id, body.path, write=True)
        if body.full and body.format != "ama":
            raise Unprocessable("a whole-bank archive is its own format; leave format out with full")
        try:
            is_dir = dest.is_dir()
        except PathNotAllowed as exc:
            raise refused(exc) from None
        if is_dir and body.format != "markdown":
            raise Unprocessable(f"{dest.shown} is a directory; give a file name inside it")
        if body.full:
            if body.run_async and not bank.is_never_written:
                job = job_start_async(kind="export", bank=bank, actor=self.actor(request),
                                      params={"path": str(dest.path), "full": True})
                return ok(job_body(job), status=202)
            _too_big_to_export(bank.memories.count(), "a whole-bank export")
            try:
                counts = bank_archive_export(bank=bank, dest=dest, actor=self.actor(request))
            except (OSError, PathNotAllowed) as exc:
                raise _failed(exc, dest) from None
            return ok({"bank_id": bank.bank_id, "path": str(dest.path), "exported_count": counts["memory"],
                       "full": True, "counts": counts})
        if body.format != "ama":
            if body.run_async and not bank.is_never_written:
                job = job_start_async(kind="export", bank=bank, actor=self.actor(request),
                                      params={"path": str(dest.path), "format": body.format})
                return ok(job_body(job), status=202)
            _too_big_to_export(bank.memories.count(), f"a {body.format} export")
            try:
                other = archive_export_as(bank=bank, dest=dest, fmt=body.format, actor=self.actor(request))
            except (OSError, ValueError) as exc:
                raise _failed(exc, dest) from None
            return ok({"bank_id": other.bank_id, "path": other.path, "exported_count": other.exported_count,
                       "format": body.format})
        # A bank that was never written exports at once (a header and no lines), even when asked async.
        if body.run_async and not bank.is_never_written:
            job = job_start_async(kind="export", bank=bank, actor=self.actor(request), params={
                "path": str(dest.path), "include_embeddings": body.include_embeddings,
                "include_entities": body.include_entities, "include_observations": body.include_observations})
            return ok(job_body(job), status=202)
        try:
            report = archive_export(bank=bank, dest=dest, actor=self.actor(request),
                                    include_embeddings=body.include_embeddings,
                                    include_entities=body.include_entities,
                                    include_observations=body.include_observations)
        except (OSError, AmaCountMismatch, PathNotAllowed) as exc:
            raise _failed(exc, dest) from None
        return ok({"bank_id": report.bank_id, "path": report.path, "exported_count": report.exported_count,
                   "memories": report.memories, "observations": report.observations})


class ImportApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, ImportRequest)
        bank = self.bank(request, body.bank_id, "admin")
        source = bank_location(self.principal(request), bank.bank_id, body.path, write=False)
        try:
            if not source.exists():
                raise Unprocessable(f"no archive at {source.shown}")
            whole_bank = is_bank_archive(source, body.format)
        except PathNotAllowed as exc:
            raise refused(exc) from None
        if whole_bank:
            # All or nothing by construction, so strict holds; a dry run restores every row and rolls back.
            # Inside a request: a file that is big, or decompresses to much, is refused before it costs the
            # worker more than the cap (a gzip bomb stops at the cap; no line longer than the line cap is held).
            cap = settings.MEMORYHUB_SYNC_TRANSFER_MAX_BYTES
            if not body.run_async:
                _too_big_to_import(source, None, cap=cap)
            if bank.is_never_written and not body.dry_run:
                bank = self.bank(request, body.bank_id, "admin", create=True)
            if body.run_async:
                job = job_start_async(kind="import", bank=bank, actor=self.actor(request),
                                      params={"path": str(source.path), "format": "mhba", "dry_run": body.dry_run})
                return ok(job_body(job), status=202)
            try:
                counts = bank_archive_import(bank=bank, path=source, actor=self.actor(request), max_bytes=cap,
                                             dry_run=body.dry_run)
            except ArchiveTooLarge:
                raise TooLargeForRequest(f"{source.shown} decompresses to more than the {cap} bytes restored inside "
                                         f"a request; {ASYNC_HINT}", limit=cap) from None
            except ValueError as exc:
                raise Unprocessable(str(exc)) from None
            return ok({"imported": counts.get("memory", 0), "skipped": 0, "errors": 0, "format": "mhba",
                       "counts": counts, "dry_run": body.dry_run})
        try:
            fmt, header, records = open_archive(source, body.format)
        except PathNotAllowed as exc:
            raise refused(exc) from None
        except (ValueError, OSError) as exc:
            # ValueError: a header (AmaHeaderError), no known format (UnknownFormat), bytes that are not
            # UTF-8, a JSON document cut short or over its size limit.
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise Unprocessable(f"{source.name}: {reason}") from None
        if bank.is_never_written and not body.dry_run:
            # Astrocyte creates a bank on import, as on retain; a dry run creates nothing.
            bank = self.bank(request, body.bank_id, "admin", create=True)
        if body.run_async:
            job = job_start_async(kind="import", bank=bank, actor=self.actor(request), params={
                "path": str(source.path), "format": fmt, "on_conflict": body.on_conflict, "dry_run": body.dry_run,
                "strict": body.strict})
            return ok(job_body(job), status=202)
        try:
            _too_big_to_import(source, header.memory_count if isinstance(header.memory_count, int) else None)
            report = archive_import(bank=bank, records=records, actor=self.actor(request),
                                    on_conflict=body.on_conflict, dry_run=body.dry_run, strict=body.strict,
                                    source_label=f"import:{fmt}:{header.provider or source.name}",
                                    expected=header.memory_count if isinstance(header.memory_count, int) else None)
        except PathNotAllowed as exc:
            # The file is opened again for each pass; one that changed into something not read since is refused.
            raise refused(exc) from None
        if report.aborted:
            # Strict mode found bad lines and wrote nothing: the request as a whole could not be processed.
            raise Unprocessable(report.aborted, counts=report.counts(), line_errors=report.errors[:100])
        return ok({**report.astrocyte_result(), "format": fmt, "counts": report.counts(),
                   "line_errors": report.errors[:100], "dry_run": report.dry_run, "aborted": report.aborted})


class JobApi(BankApiView):
    def get(self, request: Request, job_id: int) -> Response:
        bank_id = self.query(request, JobQuery).bank_id
        try:
            bank = self.bank(request, bank_id, "read", must_exist=True)
        except BankNotFound:
            # A bank being (or already) deleted: its deletion job stays visible to the bank's admins.
            return ok(job_body(bank_deletion_job(principal=self.principal(request), bank_id=bank_id,
                                                 job_id=job_id)))
        job = Job.objects.select_related("bank").filter(pk=job_id, bank=bank).first()
        if job is None:
            raise NotFound(f"job {job_id} not found")
        return ok(job_body(job))


class JobCancelApi(BankApiView):
    def post(self, request: Request, job_id: int) -> Response:
        bank = self.bank(request, self.body(request, JobQuery).bank_id, "admin", must_exist=True)
        job = Job.objects.select_related("bank").filter(pk=job_id, bank=bank).first()
        if job is None:
            raise NotFound(f"job {job_id} not found")
        return ok(job_body(job_cancel_request(job=job, actor=self.actor(request))))


class JobResumeApi(BankApiView):
    """A failed or dead import continues in a new job after its last committed batch."""

    def post(self, request: Request, job_id: int) -> Response:
        bank = self.bank(request, self.body(request, JobQuery).bank_id, "admin", must_exist=True)
        job = Job.objects.select_related("bank").filter(pk=job_id, bank=bank).first()
        if job is None:
            raise NotFound(f"job {job_id} not found")
        return ok(job_body(job_resume(job=job, actor=self.actor(request))), status=202)


class ReextractEntitiesApi(BankApiView):
    """Re-extract every memory's entities with the bank's current provider, as a resumable job (202)."""

    def post(self, request: Request, bank_id: str) -> Response:
        bank = self.bank(request, bank_id, "admin", must_exist=True)
        body = self.body(request, ReextractRequest)
        return ok(job_body(entities_reextract_start(bank=bank, actor=self.actor(request), batch=body.batch)),
                  status=202)
