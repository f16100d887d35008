"""Time travel, the audit log (with CSV export) and API tokens."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from banks.access import PERMISSIONS
from banks.models import ApiToken, AuditEvent, Memory
from banks.selectors.audit import with_target_preview
from banks.selectors.memories import bounded_count
from banks.selectors.recall import RecallFilters, recall_bank
from banks.services.tokens import MINTING_PERMISSION, token_create, token_revoke
from curation.access import actor, operator, operator_bank
from curation.forms import TokenForm
from memoryhub.csv_cells import neutralise_row
from memoryhub.errors import AccessDenied, InvalidInput, MemoryHubError
from memoryhub.input_rules import parse_time, utc_datetime

SHOWN = 200


def _page_time(request: HttpRequest, field: str) -> datetime | None:
    """A time typed in a page: read as the API reads it, refused (400 page) when no reader can show it."""
    raw = request.GET.get(field, "").strip()
    if not raw:
        return None
    parsed = parse_time(raw)
    if parsed is None:
        raise InvalidInput("not a date or date-time (ISO 8601, such as 2026-01-31T09:00)", field=field)
    return utc_datetime(parsed, field)


@login_required
def time_travel(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    now = timezone.now()
    a = _page_time(request, "from") or now - timedelta(days=7)
    b = _page_time(request, "to") or now
    query = request.GET.get("q", "").strip()
    seen = Memory.objects.filter(bank=bank).defer("embedding", "metadata")
    added_rows = seen.filter(retained_at__gt=a, retained_at__lte=b)
    removed_rows = seen.filter(Q(forgotten_at__gt=a, forgotten_at__lte=b) | Q(archived_at__gt=a, archived_at__lte=b))
    added = list(added_rows.order_by("-retained_at")[:SHOWN])
    removed = list(removed_rows.order_by("-updated_at")[:SHOWN])
    # The lists show the latest SHOWN; the headings say of how many, counted up to COUNT_CAP (a week of a
    # busy bank can hold a million memories: counting them all on every view would read them all).
    added_total, added_more = (len(added), False) if len(added) < SHOWN else bounded_count(added_rows)
    removed_total, removed_more = (len(removed), False) if len(removed) < SHOWN else bounded_count(removed_rows)
    hits = recall_bank(bank, query, max_results=20, filters=RecallFilters(as_of=b),
                       include_directives=False).hits if query else []
    return render(request, "curation/time_travel.html", {
        "bank": bank, "a": a, "b": b, "added": added, "removed": removed, "q": query, "hits": hits,
        "added_total": added_total, "removed_total": removed_total, "added_more": added_more,
        "removed_more": removed_more,
        "tab": "time"})


def _audit_rows(request: HttpRequest):  # noqa: ANN202
    principal = operator(request)
    rows = AuditEvent.objects.all()
    if not request.user.is_superuser:
        rows = rows.filter(bank__in=principal.visible_banks())
    for key, field in (("bank", "bank_ref"), ("actor", "actor"), ("action", "action")):
        value = request.GET.get(key, "").strip()
        if value:
            rows = rows.filter(**{f"{field}__icontains" if key == "actor" else field: value})
    return rows.order_by("-created_at", "-id")


@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    rows = _audit_rows(request)
    before = request.GET.get("before", "")
    cursor = AuditEvent.objects.filter(pk=int(before)).values_list("created_at", flat=True).first() \
        if before.isdigit() else None
    if cursor is not None:
        # Keyset on (created_at, id), the page's order: the bound on created_at is an index condition,
        # so a page deep in a long log starts where the last one stopped instead of walking to it.
        rows = rows.filter(created_at__lte=cursor).filter(Q(created_at__lt=cursor) | Q(id__lt=int(before)))
    page = list(with_target_preview(rows)[:101])
    return render(request, "curation/audit.html", {"events": page[:100], "more": len(page) > 100,
                                                   "next": page[99].pk if len(page) > 100 else None,
                                                   "params": request.GET, "tab": "audit"})


class _Echo:
    def write(self, value: str) -> str:
        return value


@login_required
def audit_csv(request: HttpRequest) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())

    def lines():  # noqa: ANN202
        yield writer.writerow(["time", "actor", "action", "bank", "targets", "reason", "compliance"])
        for event in _audit_rows(request).iterator(chunk_size=2000):
            # Actors, reasons and targets come from callers: a cell a spreadsheet would run stays text.
            yield writer.writerow(neutralise_row([event.created_at.isoformat(), event.actor, event.action,
                                                  event.bank_ref, " ".join(event.target_ids), event.reason,
                                                  event.compliance]))

    response = StreamingHttpResponse(lines(), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="memoryhub-audit.csv"'
    return response


def _may_mint(request: HttpRequest) -> bool:
    principal = operator(request)
    return principal.is_superuser or any(MINTING_PERMISSION in perms for _, perms in principal.grants)


def _tokens_page(request: HttpRequest, form: TokenForm | None = None, status: int = 200) -> HttpResponse:
    principal = operator(request)
    rows = ApiToken.objects.all() if request.user.is_superuser else ApiToken.objects.filter(created_by_id=request.user.pk)
    return render(request, "curation/tokens.html", {
        "tokens": rows.order_by("-created_at")[:500], "form": form or TokenForm(permissions=PERMISSIONS),
        "banks": principal.visible_banks().order_by("bank_id")[:500], "may_mint": _may_mint(request),
        "now": timezone.now(), "secret": request.session.pop("new_token_secret", None), "tab": "tokens"},
        status=status)


@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    return _tokens_page(request)


@login_required
@require_POST
def token_new(request: HttpRequest) -> HttpResponse:
    principal = operator(request)
    if not _may_mint(request):
        raise PermissionDenied("Creating API tokens needs the curator or admin role on a bank.")
    form = TokenForm(request.POST, permissions=PERMISSIONS)
    if not form.is_valid():
        return _tokens_page(request, form, status=422)
    patterns, perms = form.cleaned_data["banks"], form.cleaned_data["permissions"]
    named = (form.cleaned_data["principal"] or "").strip()
    # Only an administrator may name another person; anyone may name an agent or a service, or themselves.
    own = {request.user.get_username(), f"user:{request.user.get_username()}"}
    if named and not request.user.is_superuser and named not in own and not named.startswith(("agent:", "service:")):
        form.add_error("principal", "Only an administrator can mint a token in another person's name.")
        return _tokens_page(request, form, status=403)
    days = form.cleaned_data["expires_in_days"]
    expires_at = timezone.now() + timedelta(days=int(days)) if days else None
    try:
        token, secret = token_create(name=form.cleaned_data["name"], actor=actor(request), created_by=request.user,
                                     grants=[{"bank": p, "permissions": perms} for p in patterns],
                                     expires_at=expires_at, principal=named, by=principal)
    except AccessDenied:
        # The service's own rule (banks.services.tokens.check_mintable), told in the form.
        form.add_error("banks", f"You cannot grant {', '.join(perms)} on {', '.join(patterns)}: you need the curator "
                                "or admin role on each, and can grant only permissions you hold.")
        return _tokens_page(request, form, status=403)
    except MemoryHubError as exc:
        form.add_error(None, exc.message)
        return _tokens_page(request, form, status=422)
    # Shown once, on the next page load, then gone from the session.
    request.session["new_token_secret"] = {"name": token.name, "secret": secret}
    return redirect("curation:tokens")


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, prefix: str) -> HttpResponse:
    rows = ApiToken.objects.all() if request.user.is_superuser else ApiToken.objects.filter(created_by_id=request.user.pk)
    token = rows.filter(prefix=prefix).first()
    if token is None:
        raise Http404("No such token")
    token_revoke(token=token, actor=actor(request), reason=request.POST.get("reason", ""), by=operator(request))
    messages.success(request, f"Token {token.name} revoked.")
    return redirect("curation:tokens")
