"""Near-duplicate review: clusters from the background scan (paged), "find again", a confirmed merge or
dismiss of a cluster."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from banks.models import Job, JobState
from banks.selectors.duplicates import duplicate_clusters
from banks.selectors.neighbours import near_duplicate_threshold
from banks.services.duplicate_scan import KIND, duplicates_scan_start, last_scan
from banks.services.merge import duplicates_dismiss, memory_merge
from curation.access import actor, operator, operator_bank
from curation.htmx import is_htmx
from memoryhub.errors import MemoryHubError

PAGE_SIZE = 50  # clusters a page shows; the others are a "next" away


def _page_url(bank_id: str, threshold: str) -> str:
    base = reverse("curation:duplicates", kwargs={"bank_id": bank_id})
    return f"{base}?{urlencode({'threshold': threshold})}" if threshold else base


@login_required
def duplicates(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    default = near_duplicate_threshold(bank)
    try:
        threshold = float(request.GET.get("threshold") or default)
    except ValueError:
        threshold = default
    threshold = min(1.0, max(0.5, threshold))
    scan = last_scan(bank)
    running = Job.objects.filter(bank=bank, kind=KIND, state__in=[JobState.QUEUED, JobState.RUNNING]).first()
    try:
        offset = max(0, int(request.GET.get("offset") or 0))
    except ValueError:
        offset = 0
    page = duplicate_clusters(bank=bank, threshold=threshold, offset=offset, limit=PAGE_SIZE)
    scanned_at = float(scan.result.get("threshold", 1.0)) if scan is not None else None
    return render(request, "curation/duplicates.html", {
        "bank": bank, "page": page, "clusters": page.clusters, "threshold": threshold, "scan": scan,
        "running": running, "below_scan": scanned_at is not None and threshold < scanned_at,
        "scan_threshold": scanned_at, "tab": "duplicates", "can_write": operator(request).can(bank_id, "write"),
    })


@login_required
@require_POST
def duplicates_scan(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "write")
    threshold = request.POST.get("threshold", "")
    try:
        job = duplicates_scan_start(bank=bank, actor=actor(request), threshold=threshold or None,
                                    full=request.POST.get("full") == "1")
        messages.success(request, f"Looking for near-duplicates over the whole bank (job {job.pk}).")
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect(_page_url(bank.bank_id, threshold))


@login_required
def duplicates_scan_status(request: HttpRequest, bank_id: str, job_id: int) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    job = Job.objects.filter(bank=bank, kind=KIND, pk=job_id).first()
    if job is None:
        raise Http404("no such scan in this bank")
    if not is_htmx(request):
        return redirect(_page_url(bank.bank_id, ""))
    response = render(request, "curation/partials/duplicate_scan.html", {"bank": bank, "running": job})
    if job.is_finished:
        response["HX-Refresh"] = "true"  # the clusters on the page are now out of date
    return response


@login_required
@require_POST
def duplicates_action(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "write")
    ids = request.POST.getlist("ids")
    try:
        if request.POST.get("action") == "dismiss":
            duplicates_dismiss(bank=bank, memory_ids=ids, actor=actor(request), by=operator(request))
            messages.success(request, "Dismissed: these will not be proposed together again.")
        elif request.POST.get("confirm") != "1":
            # Merging archives all but one text of the cluster: never a one-click action.
            messages.error(request, "Nothing merged: tick \u201cthese say the same thing\u201d to confirm the merge.")
        else:
            survivor = memory_merge(bank=bank, memory_ids=ids, actor=actor(request), reason="near-duplicate review",
                                    by=operator(request))
            messages.success(request, f"Merged {len(ids) - 1} into {survivor.memory_id}.")
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect(_page_url(bank.bank_id, request.POST.get("threshold", "")))
