"""A bank's members: who holds which role on it. Every operator of the bank sees the list (so a curator
knows whom to ask); only its admins add, change and remove, through the membership services the admin
and ``create_operator`` use too."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from banks.models import BankMembership, BankRole
from banks.selectors.members import bank_members, bank_membership
from banks.services.memberships import membership_remove, membership_set
from curation.access import actor, operator, operator_bank
from memoryhub.errors import AccessDenied, MemoryHubError


@login_required
def members(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    return render(request, "curation/members.html", {
        "bank": bank, "tab": "members", "members": list(bank_members(bank)), "roles": BankRole.choices,
        "can_admin": operator(request).can(bank.bank_id, "admin")})


def _membership(request: HttpRequest, bank_id: str, membership_id: int) -> BankMembership:
    bank = operator_bank(request, bank_id, "admin")
    membership = bank_membership(bank, membership_id)
    if membership is None:
        raise Http404("No such member of this bank")
    return membership


@login_required
@require_POST
def member_add(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    username = request.POST.get("username", "").strip()
    role = request.POST.get("role", "")
    user = get_user_model().objects.filter(username=username, is_active=True).first() if username else None
    if user is None:
        messages.error(request, f"No active operator is named {username!r}: ask a superuser to create the account "
                                "first (manage.py create_operator)." if username else "username: enter an operator's name.")
        return redirect("curation:members", bank_id=bank.bank_id)
    return _set(request, bank.bank_id, user=user, role=role, membership=None)


@login_required
@require_POST
def member_role(request: HttpRequest, bank_id: str, membership_id: int) -> HttpResponse:
    membership = _membership(request, bank_id, membership_id)
    return _set(request, bank_id, user=membership.user, role=request.POST.get("role", ""), membership=membership)


def _set(request: HttpRequest, bank_id: str, *, user: object, role: str,
         membership: BankMembership | None) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    try:
        row = membership_set(user=user, bank=bank, role=role, actor=actor(request), membership=membership,
                             by=operator(request))
        messages.success(request, f"{row.user.get_username()} is {row.role} on {bank.bank_id}.")
    except AccessDenied:
        raise  # a 403 page, as for any refused role
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("curation:members", bank_id=bank.bank_id)


@login_required
@require_POST
def member_remove(request: HttpRequest, bank_id: str, membership_id: int) -> HttpResponse:
    membership = _membership(request, bank_id, membership_id)
    name = membership.user.get_username()
    try:
        membership_remove(membership=membership, actor=actor(request), by=operator(request))
        messages.success(request, f"{name} no longer has a role on {bank_id}.")
    except AccessDenied:
        raise
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("curation:members", bank_id=bank_id)
