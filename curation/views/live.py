"""Mental models (block editor sending delta operations, revisions, diff, revert), directives, observations."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from banks.live.structured_doc import load_document, parse_markdown
from banks.models import Bank, MentalModel
from banks.selectors.consolidation import consolidation_status
from banks.selectors.live_layers import rule_text
from banks.selectors.mental_models import mental_model_list, revision_diff, revision_list
from banks.selectors.observations import observation_list
from banks.services.directives import directive_create, directive_update
from banks.services.mental_models import (
    mental_model_apply_delta,
    mental_model_create,
    mental_model_delete,
    mental_model_get,
    mental_model_refresh,
    mental_model_revert,
)
from banks.services.observations import (
    observation_create,
    observation_delete,
    observation_get,
    observation_invalidate,
    observation_update,
)
from curation.access import actor, operator, operator_bank
from curation.charts import evidence_strip
from curation.forms import (
    DirectiveChangeForm,
    DirectiveForm,
    ModelActionForm,
    ModelCreateForm,
    ModelEditForm,
    ObservationChangeForm,
    ObservationCreateForm,
)
from curation.htmx import htmx_template
from memoryhub.errors import MemoryHubError, NotFound

DIRECTIVE = MentalModel.Kind.DIRECTIVE


def _models_page(request: HttpRequest, bank: Bank, form: ModelCreateForm | None = None,
                 status: int = 200) -> HttpResponse:
    rows = mental_model_list(bank=bank, kind="general")
    return render(request, "curation/models.html", {"bank": bank, "models": rows[:500], "tab": "models",
                                                    "form": form or ModelCreateForm(),
                                                    "can_write": operator(request).can(bank.bank_id, "write")},
                  status=status)


@login_required
def models(request: HttpRequest, bank_id: str) -> HttpResponse:
    return _models_page(request, operator_bank(request, bank_id))


@login_required
@require_POST
def model_new(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "write")
    form = ModelCreateForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            model = mental_model_create(bank=bank, model_id=data["model_id"].strip(), title=data["title"],
                                        content=data["content"], scope=data["scope"].strip() or "bank",
                                        actor=actor(request), source_ids=data["source_ids"], by=operator(request))
        except MemoryHubError as exc:
            form.add_error(getattr(exc, "field", None) if getattr(exc, "field", None) in form.fields else None,
                           exc.message)
        else:
            return redirect("curation:model", bank_id=bank.bank_id, model_id=model.model_id)
    return _models_page(request, bank, form, status=422)


@login_required
def model_detail(request: HttpRequest, bank_id: str, model_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    model = mental_model_get(bank=bank, model_id=model_id)
    doc = load_document(model.structured_doc) if model.structured_doc else parse_markdown(model.content)
    revisions = list(revision_list(model=model)[:200])
    diff = None
    a, b = request.GET.get("from"), request.GET.get("to")
    if a and b and a.isdigit() and b.isdigit():
        try:
            diff = revision_diff(model=model, from_revision=int(a), to_revision=int(b))
        except MemoryHubError as exc:
            messages.error(request, exc.message)
    context = {"bank": bank, "model": model, "doc": doc, "revisions": revisions, "diff": diff, "tab": "models",
               "can_write": operator(request).can(bank_id, "write"),
               "can_forget": operator(request).can(bank_id, "forget")}
    return render(request, htmx_template(request, "curation/model_detail.html", "model-body"), context)


def _block(kind: str, text: str, language: str = "") -> dict:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if kind in {"bullet_list", "ordered_list"}:
        return {"type": kind, "items": [line.lstrip("-*+0123456789.) ").strip() for line in lines]}
    if kind == "code":
        return {"type": "code", "language": language, "text": text}
    return {"type": "paragraph", "text": " ".join(lines)}


@login_required
@require_POST
def model_edit(request: HttpRequest, bank_id: str, model_id: str) -> HttpResponse:
    """Every edit is sent as delta operations, so only the touched block changes."""
    bank = operator_bank(request, bank_id, "write")
    model = mental_model_get(bank=bank, model_id=model_id)
    form = ModelEditForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Nothing saved: {form.error_summary()}")
        return redirect("curation:model", bank_id=bank.bank_id, model_id=model_id)
    data = form.cleaned_data
    op, section, index = data["op"], data["section_id"], data["index"] or 0
    block = _block(data["block_type"] or "paragraph", data["text"])
    operation: dict = {
        "replace_block": {"op": op, "section_id": section, "index": index, "block": block},
        "append_block": {"op": op, "section_id": section, "block": block},
        "remove_block": {"op": op, "section_id": section, "index": index},
        "add_section": {"op": op, "heading": data["heading"].strip(),
                        **({"after_section_id": section} if section else {})},
        "rename_section": {"op": op, "section_id": section, "new_heading": data["heading"].strip()},
        "remove_section": {"op": op, "section_id": section},
    }[op]
    try:
        model, result = mental_model_apply_delta(model=model, operations=[operation], actor=actor(request),
                                                 expected_revision=data["revision"], by=operator(request))
        if result.changed:
            messages.success(request, f"Saved as revision {model.revision}.")
        else:
            messages.error(request, f"Nothing changed: {result.skipped[0]['reason']}.")
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("curation:model", bank_id=bank.bank_id, model_id=model_id)


@login_required
@require_POST
def model_action(request: HttpRequest, bank_id: str, model_id: str) -> HttpResponse:
    action = request.POST.get("action", "")
    bank = operator_bank(request, bank_id, "forget" if action == "delete" else "write")
    model = mental_model_get(bank=bank, model_id=model_id)
    form = ModelActionForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Nothing done: {form.error_summary()}")
        return redirect("curation:model", bank_id=bank.bank_id, model_id=model_id)
    data = form.cleaned_data
    try:
        if action == "revert":
            model = mental_model_revert(model=model, to_revision=data["to"], actor=actor(request),
                                        by=operator(request))
            messages.success(request, f"Reverted; now at revision {model.revision}.")
        elif action == "refresh":
            mental_model_refresh(model=model, actor=actor(request), content=data["content"] or None,
                                 add_source_ids=data["source_ids"], by=operator(request))
            messages.success(request, "Refreshed.")
        else:
            mental_model_delete(model=model, actor=actor(request), reason=data["reason"], by=operator(request))
            messages.success(request, f"Deleted {model.model_id}.")
            return redirect("curation:models", bank_id=bank.bank_id)
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("curation:model", bank_id=bank.bank_id, model_id=model_id)


def _directives_page(request: HttpRequest, bank: Bank, form: DirectiveForm | None = None,
                     status: int = 200) -> HttpResponse:
    rows = [{"model": d, "rule": rule_text(d.structured_doc, d.content)}
            for d in MentalModel.objects.filter(bank=bank, kind=DIRECTIVE, deleted_at__isnull=True)
            .order_by("-is_active", "-priority", "created_at")[:500]]
    return render(request, "curation/directives.html", {"bank": bank, "rows": rows, "tab": "directives",
                                                        "form": form or DirectiveForm(),
                                                        "can_write": operator(request).can(bank.bank_id, "write")},
                  status=status)


@login_required
def directives(request: HttpRequest, bank_id: str) -> HttpResponse:
    return _directives_page(request, operator_bank(request, bank_id))


@login_required
@require_POST
def directive_save(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "write")
    try:
        if request.POST.get("directive_id", "").strip():
            change = DirectiveChangeForm(request.POST)
            if not change.is_valid():
                messages.error(request, f"Nothing changed: {change.error_summary()}")
                return redirect("curation:directives", bank_id=bank.bank_id)
            data = change.cleaned_data
            directive = mental_model_get(bank=bank, model_id=data["directive_id"].strip(), kind=DIRECTIVE)
            if data["action"] == "delete":
                mental_model_delete(model=directive, actor=actor(request), by=operator(request))
            else:
                update = data["action"] == "update"
                directive_update(directive=directive, actor=actor(request),
                                 rule_text=data["rule_text"] if update else None,
                                 scope=data["scope"] if update else None,
                                 is_active={"activate": True, "deactivate": False}.get(data["action"]),
                                 priority=(data["priority"] or 0) if update else None, by=operator(request))
        else:
            form = DirectiveForm(request.POST)
            if not form.is_valid():
                return _directives_page(request, bank, form, status=422)
            directive_create(bank=bank, rule_text=form.cleaned_data["rule_text"], actor=actor(request),
                             scope=form.cleaned_data["scope"].strip() or "bank",
                             priority=form.cleaned_data["priority"], by=operator(request))
        messages.success(request, "Directives updated.")
    except NotFound:
        raise  # an unknown directive is a 404 page, like every unknown id
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("curation:directives", bank_id=bank.bank_id)


@login_required
def observations(request: HttpRequest, bank_id: str) -> HttpResponse:
    return _observations_page(request, operator_bank(request, bank_id))


def _observations_page(request: HttpRequest, bank: Bank, form: ObservationCreateForm | None = None,
                       status: int = 200) -> HttpResponse:
    bank_id = bank.bank_id
    trend = request.GET.get("trend") or None
    views = observation_list(bank=bank, trend=trend, scope=request.GET.get("scope") or None, limit=200,
                             include_invalidated=request.GET.get("invalidated") == "1",
                             query=request.GET.get("q") or None)
    rows = [{"view": v, "timeline": evidence_strip(v.evidence_times)} for v in views]
    return render(request, htmx_template(request, "curation/observations.html", "observation-list"),
                  {"bank": bank, "rows": rows, "trend": trend or "", "tab": "observations",
                   "consolidation": consolidation_status(bank),
                   "trends": ["new", "strengthening", "stable", "weakening", "stale"],
                   "can_write": operator(request).can(bank_id, "write"),
                   "can_forget": operator(request).can(bank_id, "forget"), "form": form or ObservationCreateForm()},
                  status=status)


@login_required
@require_POST
def observation_save(request: HttpRequest, bank_id: str) -> HttpResponse:
    action = request.POST.get("action", "create")
    bank = operator_bank(request, bank_id, "forget" if action == "delete" else "write")
    try:
        if action == "create":
            form = ObservationCreateForm(request.POST)
            if not form.is_valid():
                return _observations_page(request, bank, form, status=422)
            observation_create(bank=bank, text=form.cleaned_data["text"], actor=actor(request),
                               source_ids=form.cleaned_data["source_ids"],
                               scope=form.cleaned_data["scope"].strip() or None,
                               confidence=form.cleaned_data["confidence"], by=operator(request))
        else:
            change = ObservationChangeForm(request.POST)
            if not change.is_valid():
                messages.error(request, f"Nothing changed: {change.error_summary()}")
                return redirect("curation:observations", bank_id=bank.bank_id)
            data = change.cleaned_data
            row = observation_get(bank=bank, observation_id=data["observation_id"])
            if data["action"] == "delete":
                observation_delete(observation=row, actor=actor(request), by=operator(request))
            elif data["action"] == "invalidate":
                observation_invalidate(observation=row, actor=actor(request), by=operator(request))
            else:
                observation_update(observation=row, actor=actor(request), text=data["text"] or None,
                                   add_source_ids=data["attach"], remove_source_ids=data["detach"],
                                   by=operator(request))
        messages.success(request, "Observations updated.")
    except NotFound:
        raise
    except MemoryHubError as exc:
        messages.error(request, exc.message)
    return redirect("curation:observations", bank_id=bank.bank_id)

