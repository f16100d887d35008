"""Banks: the list with activity, creating a bank, a bank's overview and settings."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from banks.models import Bank
from banks.providers import bank_embedder
from banks.selectors.bank_jobs import deletions_in_progress
from banks.selectors.search_language import search_reindex_job
from banks.selectors.stats import bank_cards, bank_overview
from banks.services.banks import bank_create, bank_delete, bank_update
from banks.services.reflect import reflect
from banks.text_search import LANGUAGES, bank_language, with_language
from curation.access import actor, operator, operator_bank
from curation.charts import day_chart, sparkline
from curation.forms import BankDeleteForm, ReflectForm
from curation.htmx import htmx_template
from memoryhub.errors import AccessDenied, MemoryHubError
from memoryhub.readers import reading_as

PAGE = 50
MAX_SEARCH_BANKS = 25


@login_required
def home(request: HttpRequest) -> HttpResponse:
    principal = operator(request)
    q = request.GET.get("q", "").strip()
    banks = principal.visible_banks()
    if q:
        banks = banks.filter(Q(bank_id__icontains=q) | Q(name__icontains=q) | Q(description__icontains=q))
    page = list(banks.order_by("bank_id")[:PAGE + 1])
    cards = bank_cards(page[:PAGE])
    for card in cards:
        card["sparkline"] = sparkline(card["spark"])
    recall_q = request.GET.get("recall", "").strip()
    hits = []
    if recall_q:
        from banks.selectors.multibank import recall_many

        # Across the operator's banks (the first MAX_SEARCH_BANKS by id), one merged ranking.
        searched = list(principal.visible_banks().order_by("bank_id")[:MAX_SEARCH_BANKS])
        if searched:
            hits = recall_many(searched, recall_q, max_results=30, include_directives=False).hits
    context = {"cards": cards, "banks": page[:PAGE], "more": len(page) > PAGE, "q": q, "recall_q": recall_q,
               "hits": hits, "can_create": request.user.is_superuser, "deletions": deletions_in_progress(principal)}
    # The deletions card polls itself; every other swap is the bank table.
    part = "deletions" if request.GET.get("part") == "deletions" else "bank-table"
    return render(request, htmx_template(request, "curation/home.html", part), context)


@login_required
@require_POST
def bank_new(request: HttpRequest) -> HttpResponse:
    if not request.user.is_superuser:
        messages.error(request, "Only administrators create banks.")
        return redirect("curation:home")
    try:
        bank = bank_create(bank_id=request.POST.get("bank_id", "").strip(), actor=actor(request),
                           name=request.POST.get("name", "").strip(),
                           description=request.POST.get("description", "").strip(), owner=request.user)
    except MemoryHubError as exc:
        messages.error(request, exc.message)
        return redirect("curation:home")
    messages.success(request, f"Bank {bank.bank_id} created.")
    return redirect("curation:bank", bank_id=bank.bank_id)


@login_required
def bank_detail(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    stats = bank_overview(bank)
    days = [(timezone.now() - timedelta(days=29 - i)).date() for i in range(30)]
    context = {"bank": bank, "stats": stats, "tab": "overview", "delete_form": BankDeleteForm(bank_id=bank.bank_id),
               "per_day_chart": day_chart(days, stats["per_day"], title="Memories retained per day",
                                          unit="retained"),
               "occurred_chart": day_chart(stats.get("occurred_days", []), stats.get("occurred_per_day", []),
                                           title="Memories by the day they happened", unit="occurred", css="bar-2"),
               "can_admin": operator(request).can(bank_id, "admin"), **_language_context(bank),
               "embedder_name": bank_embedder(bank).name}
    return render(request, "curation/bank_detail.html", context)


def _language_context(bank: Bank) -> dict[str, Any]:
    return {"search_languages": LANGUAGES, "search_language": bank_language(bank.config),
            "search_reindex_job": search_reindex_job(bank)}


@login_required
@require_POST
def bank_settings(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "admin")
    try:
        threshold = request.POST.get("dedup_threshold", "").strip()
        config = None
        language = request.POST.get("language", "").strip()
        if language and language != bank_language(bank.config):
            config = with_language(bank.config, language)
        bank_update(bank=bank, actor=actor(request), by=operator(request), name=request.POST.get("name", bank.name).strip(),
                    description=request.POST.get("description", bank.description).strip(),
                    dedup_threshold=float(threshold) if threshold else None, config=config)
        job = search_reindex_job(bank)
        messages.success(request, "Settings saved." + (f" Re-indexing the bank's memories in {language} (job "
                                                        f"{job.pk})." if job is not None and config else ""))
    except AccessDenied:
        raise  # a 403 page, as for any refused role
    except (MemoryHubError, ValueError) as exc:
        messages.error(request, getattr(exc, "message", None) or "The dedup threshold must be a number.")
    return redirect("curation:bank", bank_id=bank.bank_id)


@login_required
@require_POST
def bank_delete_view(request: HttpRequest, bank_id: str) -> HttpResponse:
    """Delete a bank and everything in it: administrators of the bank only, after typing its id."""
    bank = operator_bank(request, bank_id, "admin")
    form = BankDeleteForm(request.POST, bank_id=bank.bank_id)
    if form.is_valid():
        try:
            job = bank_delete(bank=bank, actor=actor(request), confirm=form.cleaned_data["confirm"],
                              reason=form.cleaned_data["reason"], by=operator(request))
        except AccessDenied:
            raise
        except MemoryHubError as exc:
            form.add_error(None, exc.message)
        else:
            if job is None:
                messages.success(request, f"Bank {bank_id} and everything in it were deleted.")
            else:
                messages.success(request, f"Bank {bank_id} is gone from every list and route; its "
                                          f"{job.progress_total} memories are being deleted in the background "
                                          f"(job {job.pk}).")
            return redirect("curation:home")
    stats = bank_overview(bank)
    return render(request, "curation/bank_detail.html", {
        "bank": bank, "stats": stats, "tab": "overview", "delete_form": form, "delete_open": True,
        "can_admin": True, **_language_context(bank),
        "embedder_name": bank_embedder(bank).name}, status=422)


@login_required
def reflect_playground(request: HttpRequest, bank_id: str) -> HttpResponse:
    """Ask the bank a question: the answer, its confidence, and the memories it cites."""
    bank = operator_bank(request, bank_id)
    form = ReflectForm(request.GET or None)
    outcome = None
    if form.is_bound and form.is_valid():
        try:
            with reading_as(actor(request), "ui"):  # the cited memories' access log names the operator
                outcome = reflect(banks=[bank], query=form.cleaned_data["q"], tags=form.cleaned_data["tags"] or None)
        except MemoryHubError as exc:
            form.add_error(None, exc.message)
    return render(request, "curation/reflect.html", {"bank": bank, "form": form, "outcome": outcome,
                                                     "tab": "reflect"})
