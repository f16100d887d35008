"""Which bank an operator may see and change. A bank they cannot see is a 404; a bank they can
see but not change in that way is a 403."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from banks.access import Principal, principal_for_user
from banks.models import Bank


def operator(request: HttpRequest) -> Principal:
    cached = getattr(request, "_principal", None)
    if cached is None:
        cached = principal_for_user(request.user)
        request._principal = cached  # type: ignore[attr-defined]
    return cached


def operator_bank(request: HttpRequest, bank_id: str, permission: str = "read") -> Bank:
    principal = operator(request)
    perms = principal.permissions_for(bank_id)
    bank = Bank.objects.active().filter(bank_id=bank_id).first() if perms else None
    if bank is None:
        raise Http404("No such bank")
    if permission not in perms:
        raise PermissionDenied(f"Your role on {bank_id} does not allow this ({permission}).")
    return bank


def actor(request: HttpRequest) -> str:
    return operator(request).label
