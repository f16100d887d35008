"""Operator screens. Each view serves the full page, or its partial to an HTMX request."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from banks.access import principal_for_user


def htmx_template(request: HttpRequest, template: str, partial: str) -> str:
    """The page on a normal or boosted request; ``page#partial`` on an HTMX swap."""
    htmx = getattr(request, "htmx", None)
    if htmx and not htmx.boosted:
        return f"{template}#{partial}"
    return template


@login_required
def home(request: HttpRequest) -> HttpResponse:
    principal = principal_for_user(request.user)
    q = request.GET.get("q", "").strip()
    banks = principal.visible_banks()
    if q:
        banks = banks.filter(Q(bank_id__icontains=q) | Q(name__icontains=q))
    context = {"banks": banks.order_by("bank_id")[:500], "q": q}
    return render(request, htmx_template(request, "curation/home.html", "bank-table"), context)
