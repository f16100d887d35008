"""Consolidation controls on the observations page (run now, the backlog, the last run) and an
observation's own page with its history, read from the audit events its changes wrote."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from banks.models import AuditEvent, Observation
from banks.selectors.audit import audit_events_about
from banks.selectors.observations import observation_view
from banks.services.consolidation_jobs import consolidation_start
from curation.access import actor, operator, operator_bank
from curation.charts import evidence_strip
from memoryhub.errors import Conflict


@login_required
@require_POST
def consolidation_run(request: HttpRequest, bank_id: str) -> HttpResponse:
    """Queue a consolidation of the bank, through the service the API uses; refused while one is queued
    or running."""
    bank = operator_bank(request, bank_id, "write")
    try:
        job = consolidation_start(bank=bank, actor=actor(request))
    except Conflict as exc:
        messages.error(request, f"Not started: {exc.message}.")
    else:
        url = reverse("portability:job", kwargs={"bank_id": bank.bank_id, "job_id": job.pk})
        messages.success(request, f"Consolidation queued as job {job.pk}; its page shows the progress ({url}).")
    return redirect("curation:observations", bank_id=bank.bank_id)


def describe_event(event: AuditEvent) -> str:
    """One line of an observation's history, in words (the audit event keeps the details)."""
    details: dict[str, Any] = event.details or {}
    action = event.action.removeprefix("observation.")
    if action == "create":
        evidence = len(details.get("source_ids") or [])
        return ("imported" if details.get("imported") else "created") + f" with {evidence} evidence"
    if action == "update":
        parts = []
        if details.get("evidence_added"):
            parts.append(f"evidence +{details['evidence_added']}")
        if details.get("evidence_removed"):
            parts.append(f"evidence −{details['evidence_removed']}")
        fields = [f for f in details.get("fields") or [] if f != "proof_count"]
        if fields:
            parts.append("changed " + ", ".join(fields))
        return "updated: " + ("; ".join(parts) if parts else "no change")
    if action == "invalidate":
        changed: list[str] = [str(i) for i in details.get("source_ids") or []]
        return "invalidated" + (f" (memories {', '.join(changed[:5])} changed)" if changed else "")
    return action


@login_required
def observation_detail(request: HttpRequest, bank_id: str, observation_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    observation = Observation.objects.filter(bank=bank, observation_id=observation_id).first()
    if observation is None:  # another bank's observation is not found here either
        raise Http404("No such observation")
    view = observation_view(observation)
    events = list(audit_events_about(bank=bank, target_id=observation.observation_id, limit=200,
                                     action_prefix="observation."))
    return render(request, "curation/observation_detail.html", {
        "bank": bank, "tab": "observations", "view": view, "o": observation,
        "timeline": evidence_strip(view.evidence_times),
        "history": [(event, describe_event(event)) for event in events],
        "can_write": operator(request).can(bank.bank_id, "write")})
