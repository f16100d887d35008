"""Memories: search and browse with filters in the URL, retain, edit, archive/restore, forget, bulk actions."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from banks.access import forget_permission
from banks.models import Bank, Memory
from banks.selectors.access_log import memory_access_page
from banks.selectors.audit import audit_events_about
from banks.selectors.citations import memory_citations
from banks.selectors.memories import (
    SORTS,
    MemoryFilters,
    approximate_count,
    bank_memory_count,
    exact_count,
    memory_facets,
    memory_page,
    memory_queryset,
    touch_filter,
)
from banks.selectors.neighbours import memory_neighbours, near_duplicate_threshold
from banks.selectors.recall import RecallFilters, bank_recall_config, recall_bank
from banks.services.access_log import access_log_days
from banks.services.bulk import ACTIONS, bulk_apply
from banks.services.bulk_jobs import bulk_job_start, bulk_runs_as_job
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain
from banks.services.memory_archiving import memory_archive, memory_restore
from banks.services.memory_edit import memory_get, memory_update
from banks.services.merge import memory_merge
from banks.services.usage import usage_record_access
from curation.access import actor, operator, operator_bank
from curation.forms import BulkForm, ForgetForm, MemoryEditForm, MergeForm, RetainForm, RowEditForm, StateForm
from curation.htmx import htmx_template, is_htmx
from memoryhub.errors import AccessDenied, Conflict, MemoryHubError
from memoryhub.readers import reading_as

PAGE = 50
MAX_SEARCH_PAGES = 20


def _list_context(request: HttpRequest, bank: Bank) -> dict[str, Any]:
    filters = MemoryFilters.from_query(request.GET)
    sort = request.GET.get("sort", "retained")
    sort = sort if sort in SORTS else "retained"
    principal = operator(request)
    query_string = {**filters.as_query(), **({"sort": sort} if sort != "retained" else {})}
    return {"bank": bank, "filters": filters, "q": request.GET.get("q", "").strip(), "tab": "memories",
            "actions": ACTIONS, "sort": sort, "facets": memory_facets(bank),
            "can_write": principal.can(bank.bank_id, "write"), "can_forget": principal.can(bank.bank_id, "forget"),
            "query_string": query_string, "list_url": reverse("curation:memories", kwargs={"bank_id": bank.bank_id}),
            "other_banks": principal.visible_banks().exclude(pk=bank.pk).order_by("bank_id")[:200]}


def _search(bank: Bank, query: str, filters: MemoryFilters, page: int, who: str) -> dict[str, Any]:
    """One page of hybrid recall, the same recall as the API; later pages ask for more and skip.

    Every page reads the same candidates per arm (as many as the first page needs): the total shown
    ("of N candidates") is the same on every page, and the pages end where the candidates do."""
    config = bank_recall_config(bank)
    config = replace(config, fixed_candidates=config.candidates(PAGE))
    outcome = recall_bank(bank, query, max_results=page * PAGE, include_directives=page == 1, config=config,
                          filters=RecallFilters(
        tags=filters.tags or None, fact_types=[filters.fact_type] if filters.fact_type else None,
        layers=[filters.layer] if filters.layer else None, sources=[filters.source] if filters.source else None))
    facts = [h for h in outcome.hits if h.layer not in {"directive", "observation"}]
    shown = facts[(page - 1) * PAGE: page * PAGE]
    with reading_as(who, "ui"):  # what the operator's search showed goes in those memories' access log
        usage_record_access([bank], shown, kind="search")
    by_id = {m.memory_id: m for m in Memory.objects.defer("embedding")
             .filter(bank=bank, memory_id__in=[h.memory_id for h in shown])}
    directives = [h for h in outcome.hits if h.layer == "directive"]
    total = outcome.total_available - len(directives)  # the first page alone puts the directives in front
    more = total > page * PAGE and len(facts) >= page * PAGE
    first = (page - 1) * PAGE + 1
    return {"entries": [(by_id[h.memory_id], h, first + i) for i, h in enumerate(shown) if h.memory_id in by_id],
            "trace": outcome.trace, "page": page,
            "total_available": total, "first_rank": first, "last_rank": first + len(shown) - 1,
            "next_page": page + 1 if more and page < MAX_SEARCH_PAGES else None,
            "prev_page": page - 1 if page > 1 else None,
            "directives": directives}


def _listing(request: HttpRequest, bank: Bank, context: dict[str, Any]) -> None:
    filters = context["filters"]
    listing = memory_page(bank, filters, after=request.GET.get("after"), before=request.GET.get("before"),
                          sort=context["sort"], limit=PAGE)
    rows = memory_queryset(bank, filters)
    if filters == MemoryFilters() and context["sort"] == "retained":
        total, exact = bank_memory_count(bank)  # the number the banks list and the overview show
    else:
        total, exact = approximate_count(rows.filter(occurred_at__isnull=False) if context["sort"] == "occurred"
                                         else rows)
    context.update(entries=[(m, None, None) for m in listing.rows], next_cursor=listing.next_cursor,
                   prev_cursor=listing.prev_cursor,
                   total=total, total_exact=exact,
                   at_start=not request.GET.get("after") and not request.GET.get("before"))


@login_required
def memory_list(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    context = _list_context(request, bank)
    if context["q"]:
        page = request.GET.get("page", "1")
        number = max(1, min(MAX_SEARCH_PAGES, int(page) if page.isdigit() else 1))
        context.update(_search(bank, context["q"], context["filters"], number, actor(request)))
    else:
        _listing(request, bank, context)
    context["retain_form"] = RetainForm()
    return render(request, htmx_template(request, "curation/memories.html", "memory-results"), context)


def _row_response(request: HttpRequest, bank: Bank, memory: Memory, *, form: RowEditForm | None = None,
                  editing: bool = False, status: int = 200) -> HttpResponse:
    principal = operator(request)
    row_form = form or RowEditForm(initial={"text": memory.text, "tags": memory.tags}, auto_id=f"row-{memory.pk}-%s")
    return render(request, "curation/partials/memory_row.html", {
        "bank": bank, "m": memory, "editing": editing or form is not None, "row_form": row_form,
        "can_write": principal.can(bank.bank_id, "write")}, status=status)


def refusal_status(exc: MemoryHubError) -> int:
    """A refused form: 409 when someone else's change got there first, else 422 (fix the input)."""
    return 409 if isinstance(exc, Conflict) else 422


@login_required
def memory_row(request: HttpRequest, bank_id: str, memory_id: str) -> HttpResponse:
    """One row of the list: shown, edited in place (text and tags), archived or restored."""
    bank = operator_bank(request, bank_id, "write" if request.method == "POST" else "read")
    memory = memory_get(bank=bank, memory_id=memory_id)
    if request.method != "POST":
        return _row_response(request, bank, memory, editing=request.GET.get("edit") == "1")
    action = request.POST.get("action", "save")
    form = RowEditForm(request.POST, auto_id=f"row-{memory.pk}-%s")
    try:
        if action == "archive":
            memory_archive(memory=memory, actor=actor(request), reason="archived from the list")
        elif action == "restore":
            memory_restore(memory=memory, actor=actor(request), reason="restored from the list")
        elif not form.is_valid():
            return _row_response(request, bank, memory, form=form, status=422)
        else:
            memory_update(memory=memory, actor=actor(request), text=form.cleaned_data["text"],
                          tags=form.cleaned_data["tags"], reason="edited in the list", by=operator(request))
    except MemoryHubError as exc:
        form.is_valid()
        form.add_error(None, exc.message)
        return _row_response(request, bank, memory, form=form, status=refusal_status(exc))
    memory.refresh_from_db()
    return _row_response(request, bank, memory)


@login_required
@require_POST
def memory_new(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "write")
    form = RetainForm(request.POST)
    refused = None
    if form.is_valid():
        data = form.cleaned_data
        try:
            outcome = memory_retain(bank=bank, text=data["text"], actor=actor(request), author=actor(request),
                                    tags=data["tags"], near_dedup=request.POST.get("allow_duplicate") != "1",
                                    source="curation", fact_type=data["fact_type"].strip() or None,
                                    by=operator(request))
        except MemoryHubError as exc:
            form.add_error("text" if getattr(exc, "field", "") == "content" else None, exc.message)
        else:
            if outcome.stored:
                messages.success(request, f"Retained as {outcome.memory_id}.")
                return redirect("curation:memories", bank_id=bank.bank_id)
            # Refused as a duplicate: the form comes back with the typed text, the memory that holds
            # it, how similar, and (unless it is the very same text) a way to store it anyway.
            refused = outcome
    context = _list_context(request, bank)
    _listing(request, bank, context)
    context.update(retain_form=form, retain_open=True, refused=refused)
    return render(request, "curation/memories.html", context, status=409 if refused else 422)


def _memory_context(request: HttpRequest, bank: Bank, memory: Memory, **forms: Any) -> dict[str, Any]:
    """Everything the memory page shows, in a bounded number of queries (no recall)."""
    threshold = near_duplicate_threshold(bank)
    near = memory_neighbours(memory, threshold=threshold, own=bank.own_vector_index) if memory.is_live else []
    principal = operator(request)
    return {
        "bank": bank, "memory": memory, "near": near, "near_threshold": threshold, "tab": "memories",
        "entities": list(memory.entities.filter(bank=bank, memoryentity__bank_id=bank.pk)[:50]),
        # Looked up in the bank's own rows: a join on the merged memory's id alone reads every bank's partition.
        "merged_into": Memory.objects.filter(bank=bank, pk=memory.merged_into_id).values_list(
            "memory_id", flat=True).first() if memory.merged_into_id else None,
        "citations": memory_citations(bank=bank, memory_id=memory.memory_id),
        "events": audit_events_about(bank=bank, target_id=memory.memory_id),
        "access": memory_access_page(bank, memory.memory_id), "access_days": access_log_days(),
        "can_write": principal.can(bank.bank_id, "write"), "can_forget": principal.can(bank.bank_id, "forget"),
        "editing": request.GET.get("edit") == "1" or "edit_form" in forms,
        "edit_form": forms.get("edit_form") or MemoryEditForm(initial={
            "text": memory.text, "tags": memory.tags, "fact_type": memory.fact_type,
            "metadata": memory.metadata or {}, "occurred_at": _iso(memory.occurred_at),
            "created_at": _iso(memory.created_at)}),
        "forget_form": _forget_form(forms.get("forget_form") or ForgetForm(),
                                    may_erase=principal.can(bank.bank_id, forget_permission(compliance=True))),
        "merge_form": forms.get("merge_form") or MergeForm(choices=[(n.memory_id, n.memory_id) for n in near]),
    }


def _iso(value: datetime | None) -> str:
    """A stored time as the edit form shows it: UTC, to the second, read back exactly."""
    return value.astimezone(UTC).isoformat(timespec="seconds" if not value.microsecond else "microseconds") \
        if value else ""


def _forget_form(form: ForgetForm, *, may_erase: bool) -> ForgetForm:
    """The compliance box is offered only to those who may erase (the service refuses anyone else)."""
    if not may_erase:
        form.fields.pop("compliance", None)
    return form


def _memory_page(request: HttpRequest, bank: Bank, memory: Memory, *, status: int = 200,
                 **forms: Any) -> HttpResponse:
    context = _memory_context(request, bank, memory, **forms)
    return render(request, htmx_template(request, "curation/memory_detail.html", "memory-card"), context,
                  status=status)


def _memory_url(bank: Bank, memory_id: str) -> str:
    return reverse("curation:memory", kwargs={"bank_id": bank.bank_id, "memory_id": memory_id})


@login_required
def memory_detail(request: HttpRequest, bank_id: str, memory_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    memory = Memory.objects.filter(bank=bank, memory_id=memory_id).first()
    if memory is None:
        raise Http404("No such memory")
    return _memory_page(request, bank, memory)


@login_required
@require_POST
def memory_edit(request: HttpRequest, bank_id: str, memory_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "write")
    memory = memory_get(bank=bank, memory_id=memory_id)
    form = MemoryEditForm(request.POST)
    status = 422
    if form.is_valid():
        data = form.cleaned_data
        try:
            memory_update(memory=memory, actor=actor(request), text=data["text"], tags=data["tags"],
                          fact_type=data["fact_type"].strip() or None, metadata=data["metadata"],
                          occurred_at=data["occurred_at"],
                          # Emptied on the form: the memory no longer says when it happened (absent: unchanged).
                          clear_occurred_at="occurred_at" in request.POST and data["occurred_at"] is None,
                          created_at=data["created_at"], reason=data["reason"], by=operator(request))
        except MemoryHubError as exc:
            form.add_error(getattr(exc, "field", None) if getattr(exc, "field", None) in form.fields else None,
                           exc.message)
            status = refusal_status(exc)
        else:
            messages.success(request, "Saved.")
            return redirect(_memory_url(bank, memory_id))
    # What the operator typed comes back with the errors next to the fields it concerns.
    return _memory_page(request, bank, memory, status=status, edit_form=form)


@login_required
@require_POST
def memory_state(request: HttpRequest, bank_id: str, memory_id: str) -> HttpResponse:
    """Archive or restore one memory (reversible), or forget it (with a reason, always)."""
    action = request.POST.get("action", "")
    bank = operator_bank(request, bank_id, "forget" if action == "forget" else "write")
    memory = memory_get(bank=bank, memory_id=memory_id)
    if action == "forget":
        forget_form = ForgetForm(request.POST)
        if not forget_form.is_valid():
            return _memory_page(request, bank, memory, status=422, forget_form=forget_form)
        compliance = forget_form.cleaned_data["compliance"]
        try:
            memory_forget(bank=bank, actor=actor(request), memory_ids=[memory.memory_id],
                          reason=forget_form.cleaned_data["reason"], compliance=compliance, by=operator(request))
        except AccessDenied:
            raise  # a compliance erase by a role without admin: a 403 page
        except MemoryHubError as exc:
            forget_form.add_error(None, exc.message)
            return _memory_page(request, bank, memory, status=422, forget_form=forget_form)
        messages.success(request, "Erased for good." if compliance else "Forgotten.")
        url = reverse("curation:memories", kwargs={"bank_id": bank.bank_id})
        return HttpResponseClientRedirect(url) if is_htmx(request) else redirect(url)
    form = StateForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Unknown action: archive, restore or forget.")
        return redirect(_memory_url(bank, memory_id))
    try:
        if form.cleaned_data["action"] == "archive":
            memory_archive(memory=memory, actor=actor(request), reason=form.cleaned_data["reason"])
            messages.success(request, "Archived. Restore it any time.")
        else:
            memory_restore(memory=memory, actor=actor(request), reason=form.cleaned_data["reason"])
            messages.success(request, "Restored.")
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    back = request.POST.get("next", "")
    if back.startswith(f"/banks/{bank.bank_id}/memories/") and url_has_allowed_host_and_scheme(back, None):
        return redirect(back)
    return redirect(_memory_url(bank, memory_id))


@login_required
@require_POST
def memory_merge_view(request: HttpRequest, bank_id: str, memory_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "write")
    memory = memory_get(bank=bank, memory_id=memory_id)
    form = MergeForm(request.POST)
    status = 422
    if form.is_valid():
        others = form.cleaned_data["merge"]
        try:
            survivor = memory_merge(bank=bank, memory_ids=[memory_id, *others], actor=actor(request),
                                    reason=form.cleaned_data["reason"], by=operator(request))
        except MemoryHubError as exc:
            form.add_error(None, exc.message)
            status = refusal_status(exc)
        else:
            messages.success(request, f"Merged {len(others)} into {survivor.memory_id}.")
            return redirect(_memory_url(bank, survivor.memory_id))
    return _memory_page(request, bank, memory, status=status, merge_form=form)


@login_required
@require_POST
def memory_bulk(request: HttpRequest, bank_id: str) -> HttpResponse:
    """Step 1 (preview) says exactly how many memories the action changes; step 2 (apply) does it."""
    form = BulkForm(request.POST)
    action = request.POST.get("action", "")
    bank = operator_bank(request, bank_id, "forget" if action == "forget" else "write")
    filters = MemoryFilters.from_query(request.POST)
    ids = request.POST.getlist("ids")
    context: dict[str, Any] = {"bank": bank, "form": form, "action": action, "ids": ids, "post": request.POST,
                               "may_erase": operator(request).can(bank.bank_id, forget_permission(compliance=True))}
    if not form.is_valid():
        return render(request, "curation/partials/bulk_preview.html", context, status=422)
    data = form.cleaned_data
    if data["scope"] == "all":
        rows = memory_queryset(bank, filters)
    else:
        rows = Memory.objects.filter(bank=bank, memory_id__in=ids)
    target = operator_bank(request, data["target"], "write") if action == "move" else None
    count = exact_count(touch_filter(rows, action, data["tag"].strip()))
    context.update(count=count, target=target)
    if data["confirm"] != "yes":
        return render(request, "curation/partials/bulk_preview.html", context)
    try:
        if bulk_runs_as_job(count):
            # A selection this big is applied by the worker, chunk by chunk, with progress on the job page.
            job = bulk_job_start(bank=bank, action=action, actor=actor(request), tag=data["tag"],
                                 reason=data["reason"], compliance=data["compliance"], target=target, total=count,
                                 filters=filters if data["scope"] == "all" else None,
                                 ids=ids if data["scope"] != "all" else None)
            messages.info(request, f"{action}: running as job {job.pk} on the worker; its page shows the progress.")
            url = reverse("portability:job", kwargs={"bank_id": bank.bank_id, "job_id": job.pk})
            return HttpResponseClientRedirect(url) if is_htmx(request) else redirect(url)
        outcome = bulk_apply(bank=bank, rows=rows, action=action, actor=actor(request), tag=data["tag"],
                             reason=data["reason"], compliance=data["compliance"], target=target,
                             by=operator(request))
    except AccessDenied:
        raise  # a compliance erase by a role without admin: a 403 page
    except MemoryHubError as exc:
        form.add_error(None, exc.message)
        return render(request, "curation/partials/bulk_preview.html", context, status=422)
    noun = "memory" if outcome.touched == 1 else "memories"
    messages.success(request, f"{action}: {outcome.touched:,} {noun} changed" +
                     (f", {outcome.skipped:,} skipped (a clash in the target bank)" if outcome.skipped else "") + ".")
    # Back to the same filtered list, which now shows the result.
    url = reverse("curation:memories", kwargs={"bank_id": bank.bank_id})
    query = urlencode(filters.as_query())
    url = f"{url}?{query}" if query else url
    return HttpResponseClientRedirect(url) if is_htmx(request) else redirect(url)
