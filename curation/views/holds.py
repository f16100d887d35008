"""Retention on a bank's page: legal holds (place, release) and the lifecycle policy (save, run now).
Bank administrators only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from banks.services.holds import hold_release, hold_set
from banks.services.lifecycle import lifecycle_policy_set, lifecycle_run
from curation.access import actor, operator, operator_bank
from memoryhub.errors import AccessDenied, InvalidInput, MemoryHubError


@login_required
@require_POST
def hold_place(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    try:
        hold = hold_set(bank=bank, hold_id=request.POST.get("hold_id", ""), reason=request.POST.get("reason", ""),
                        set_by=actor(request), actor=actor(request), by=operator(request))
        messages.success(request, f"Legal hold {hold.hold_id} is active: nothing in this bank can be forgotten.")
    except AccessDenied:
        raise  # a 403 page, as for any refused role
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("curation:bank", bank_id=bank.bank_id)


@login_required
@require_POST
def hold_lift(request: HttpRequest, bank_id: str, hold_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    if hold_release(bank=bank, hold_id=hold_id, actor=actor(request), reason=request.POST.get("reason", ""),
                    by=operator(request)):
        messages.success(request, f"Legal hold {hold_id} released.")
    else:
        messages.error(request, f"No active legal hold {hold_id}.")
    return redirect("curation:bank", bank_id=bank.bank_id)


def _days(value: str) -> int | None:
    value = value.strip()
    if not value:
        return None
    if not value.isdigit():
        raise InvalidInput("must be a whole number of days, or empty", field="days")
    return int(value)


@login_required
@require_POST
def lifecycle_save(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    try:
        lifecycle_policy_set(
            bank=bank, actor=actor(request), by=operator(request), enabled=request.POST.get("enabled") == "on",
            delete_after_days=_days(request.POST.get("delete_after_days", "")),
            archive_after_days=_days(request.POST.get("archive_after_days", "")),
            exempt_tags=[t.strip() for t in request.POST.get("exempt_tags", "").split(",") if t.strip()])
        messages.success(request, "Lifecycle policy saved.")
    except AccessDenied:
        raise  # a 403 page, as for any refused role
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("curation:bank", bank_id=bank.bank_id)


@login_required
@require_POST
def lifecycle_run_now(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    try:
        outcome = lifecycle_run(bank=bank, actor=actor(request), by=operator(request))
    except AccessDenied:
        raise  # a 403 page, as for any refused role
    except MemoryHubError as exc:
        messages.error(request, exc.message)
        return redirect("curation:bank", bank_id=bank.bank_id)
    return redirect("portability:job", bank_id=bank.bank_id, job_id=outcome.job_id)
