"""Operator pages for moving banks: browse the roots, upload, preview (dry run), import as a job with
live progress, export to a root or download directly. Every path goes through the containment function."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from banks.models import Bank, Job
from banks.services.jobs import job_cancel_request
from curation.access import actor, operator, operator_bank
from curation.htmx import htmx_template
from memoryhub.errors import MemoryHubError
from portability.formats.registry import READERS
from portability.jobs import KINDS, entities_reextract_start, job_resume, job_start_async
from portability.paths import (
    BANKS_DIR,
    Location,
    PathNotAllowed,
    bank_parts,
    list_entries,
    sanitize_upload_name,
    shown_bank_dir,
)
from portability.roots import bank_location, every_bank_admin, portability_roots
from portability.services import archive_stream
from portability.services.bank_archive import bank_archive_stream
from portability.services.job_health import RESUMABLE
from portability.uploads import BankFolderUpload, TooLarge

MAX_LISTED = 200
# The file (or, for Markdown, directory) name an export gets when the operator gives none.
EXPORT_SUFFIXES = {"ama": ".ama.jsonl", "mhba": ".mhba.jsonl", "csv": ".csv", "markdown": "-markdown", "amplihack": ".amplihack.json",
                   "agentos_json": ".agentos.json"}


def _files(where: Location) -> list[dict]:
    return [{**entry, "path": str(entry["location"].path), "shown": entry["location"].shown}
            for entry in list_entries(where, MAX_LISTED)]


def _legacy_files(root: Location) -> list[dict]:
    """Files in the root from before the per-bank layout: shown only to an operator with every bank."""
    return [entry for entry in _files(root) if entry["name"] != BANKS_DIR]


def _root_for(request: HttpRequest, bank_id: str) -> Location:
    """The bank's directory in the root the form names; a root that is not configured is refused."""
    chosen = request.POST.get("root", "")
    for root in portability_roots():
        if chosen in (str(root), ""):
            return Location(root, bank_parts(bank_id))
    raise MemoryHubError("Choose one of the configured roots.")


@login_required
def transfer(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    roots = portability_roots()
    legacy = every_bank_admin(operator(request))
    listed = [{"path": str(r), "bank_dir": shown_bank_dir(bank.bank_id),
               "files": _files(Location(r, bank_parts(bank.bank_id))),
               "legacy": _legacy_files(Location(r)) if legacy else []} for r in roots]
    context = {"bank": bank, "roots": listed, "tab": "transfer",
               "jobs": Job.objects.filter(bank=bank, kind__in=KINDS).order_by(
                   "-created_at")[:20], "formats": sorted(READERS),
               "max_upload_mb": settings.MEMORYHUB_MAX_UPLOAD_BYTES // (1024 * 1024),
               "export_formats": list(EXPORT_SUFFIXES)}
    return render(request, "portability/transfer.html", context)


@login_required
@require_POST
@csrf_exempt  # the CSRF check reads the body: it runs below, once the upload handler is in place
def upload(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    roots = portability_roots()
    # Refuse an oversized body from its declared length, before Django reads any of it.
    declared = int(request.META.get("CONTENT_LENGTH") or 0)
    if not roots or declared > settings.MEMORYHUB_MAX_UPLOAD_BYTES + 64 * 1024:
        messages.error(request, f"The file is larger than the {settings.MEMORYHUB_MAX_UPLOAD_BYTES} byte limit."
                       if roots else "No portability roots are configured.")
        return redirect("portability:transfer", bank_id=bank.bank_id)
    handler = BankFolderUpload(request, Location(roots[0], bank_parts(bank.bank_id)),
                               settings.MEMORYHUB_MAX_UPLOAD_BYTES)
    request.upload_handlers = [handler]
    try:
        return _upload(request, bank, handler)
    except (PathNotAllowed, TooLarge) as exc:
        # Raised while the body is read (by the CSRF check first): the file is dropped, the page says why.
        messages.error(request, str(exc))
    except OSError as exc:
        messages.error(request, f"The upload could not be written: {exc.strerror or exc.__class__.__name__}.")
    finally:
        handler.discard()
    return redirect("portability:transfer", bank_id=bank.bank_id)


@csrf_protect
def _upload(request: HttpRequest, bank: Bank, handler: BankFolderUpload) -> HttpResponse:
    try:
        upload = request.FILES.get("archive")
        if upload is None or handler.pending is None:
            raise MemoryHubError("Choose a file to upload.")
        dest = _root_for(request, bank.bank_id) / sanitize_upload_name(upload.name or "")
        # Same mode as exports (0600): an archive holds a bank's memories, so only the server's user reads
        # it. Received under a temporary name and linked into place only if the name is still free.
        handler.pending.keep(dest)
        messages.success(request, f"Uploaded {dest.name} to {dest.parent.shown}/.")
    except (MemoryHubError, PathNotAllowed, TooLarge) as exc:
        messages.error(request, getattr(exc, "message", str(exc)))
    except OSError as exc:
        messages.error(request, f"The upload could not be written: {exc.strerror or exc.__class__.__name__}.")
    return redirect("portability:transfer", bank_id=bank.bank_id)


@login_required
@require_POST
def start(request: HttpRequest, bank_id: str) -> HttpResponse:
    """Queue a preview (dry run), an import, an export, a re-embed or an entity re-extraction as a job."""
    bank = operator_bank(request, bank_id, "admin")
    kind = request.POST.get("kind", "")
    try:
        if kind in {"preview", "import"}:
            source = bank_location(operator(request), bank.bank_id, request.POST.get("path", ""), write=False)
            if not source.exists():
                raise MemoryHubError(f"No archive at {source.shown}.")
            params = {"path": str(source.path), "format": request.POST.get("format") or None,
                      "on_conflict": request.POST.get("on_conflict", "skip"), "dry_run": kind == "preview",
                      "strict": request.POST.get("strict") == "on"}
            job = job_start_async(kind="import", bank=bank, actor=actor(request), params=params)
        elif kind == "export":
            fmt = request.POST.get("format") or "ama"
            if fmt not in EXPORT_SUFFIXES:
                raise MemoryHubError(f"Unknown export format {fmt!r}.")
            name = sanitize_upload_name(request.POST.get("name") or f"{bank.bank_id}{EXPORT_SUFFIXES[fmt]}")
            dest = _root_for(request, bank.bank_id) / name
            if fmt == "mhba":  # the whole bank, every table (what the download's "whole bank" link streams)
                params = {"path": str(dest.path), "full": True}
            else:
                params = {"path": str(dest.path), "format": fmt,
                          "include_embeddings": request.POST.get("include_embeddings") == "on"}
            job = job_start_async(kind="export", bank=bank, actor=actor(request), params=params)
        elif kind == "reembed":
            job = job_start_async(kind="reembed", bank=bank, actor=actor(request), params={})
        elif kind == "reextract_entities":
            if request.POST.get("confirm") != "yes":
                raise MemoryHubError("Confirm the re-extraction first.")
            job = entities_reextract_start(bank=bank, actor=actor(request))
        else:
            raise MemoryHubError("Unknown job.")
    except (MemoryHubError, PathNotAllowed) as exc:
        messages.error(request, getattr(exc, "message", str(exc)))
        return redirect("portability:transfer", bank_id=bank.bank_id)
    return redirect("portability:job", bank_id=bank.bank_id, job_id=job.pk)


@login_required
def job_detail(request: HttpRequest, bank_id: str, job_id: int) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    job = Job.objects.filter(pk=job_id, bank=bank).first()
    if job is None:
        raise Http404("No such job")
    return render(request, htmx_template(request, "portability/job.html", "job-status"),
                  {"bank": bank, "job": job, "tab": "transfer",
                   "resumable": job.kind in RESUMABLE and job.state == Job.State.FAILED and job.resumed_by is None})


@login_required
@require_POST
def job_resume_view(request: HttpRequest, bank_id: str, job_id: int) -> HttpResponse:
    """A failed or dead import, re-extraction or re-embed continues in a new job after its last committed batch."""
    bank = operator_bank(request, bank_id, "admin")
    job = Job.objects.filter(pk=job_id, bank=bank).first()
    if job is None:
        raise Http404("No such job")
    try:
        resumed = job_resume(job=job, actor=actor(request))
    except MemoryHubError as exc:
        messages.error(request, exc.message)
        return redirect("portability:job", bank_id=bank.bank_id, job_id=job.pk)
    return redirect("portability:job", bank_id=bank.bank_id, job_id=resumed.pk)


@login_required
@require_POST
def job_cancel(request: HttpRequest, bank_id: str, job_id: int) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    job = Job.objects.filter(pk=job_id, bank=bank).first()
    if job is None:
        raise Http404("No such job")
    try:
        job_cancel_request(job=job, actor=actor(request))
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("portability:job", bank_id=bank.bank_id, job_id=job.pk)


@login_required
def download(request: HttpRequest, bank_id: str) -> StreamingHttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    name = sanitize_upload_name(bank.bank_id)
    if request.GET.get("full") == "1":
        whole = bank_archive_stream(bank=bank, actor=actor(request))
        response = StreamingHttpResponse((line.encode("utf-8") for line in whole),
                                         content_type="application/jsonl")
        response["Content-Disposition"] = f'attachment; filename="{name}.mhba.jsonl"'
        return response
    lines = archive_stream(bank=bank, actor=actor(request),
                           include_embeddings=request.GET.get("embeddings") == "1")
    response = StreamingHttpResponse((line.encode("utf-8") for line in lines), content_type="application/jsonl")
    response["Content-Disposition"] = f'attachment; filename="{sanitize_upload_name(bank.bank_id)}.ama.jsonl"'
    return response
