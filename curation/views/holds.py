"""Legal holds on a bank's settings: place one with a reason, release one. Bank administrators only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from banks.services.holds import hold_release, hold_set
from curation.access import actor, operator_bank
from memoryhub.errors import MemoryHubError


@login_required
@require_POST
def hold_place(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    try:
        hold = hold_set(bank=bank, hold_id=request.POST.get("hold_id", ""), reason=request.POST.get("reason", ""),
                        set_by=actor(request), actor=actor(request))
        messages.success(request, f"Legal hold {hold.hold_id} is active: nothing in this bank can be forgotten.")
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("curation:bank", bank_id=bank.bank_id)


@login_required
@require_POST
def hold_lift(request: HttpRequest, bank_id: str, hold_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    if hold_release(bank=bank, hold_id=hold_id, actor=actor(request), reason=request.POST.get("reason", "")):
        messages.success(request, f"Legal hold {hold_id} released.")
    else:
        messages.error(request, f"No active legal hold {hold_id}.")
    return redirect("curation:bank", bank_id=bank.bank_id)
