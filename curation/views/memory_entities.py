"""A memory's entities on its page: add one, remove one, change an entity's type."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from banks.services.memory_edit import memory_get
from banks.services.memory_entities import memory_entity_add, memory_entity_remove, memory_entity_retype
from curation.access import actor, operator_bank
from memoryhub.errors import InvalidInput, MemoryHubError


@login_required
@require_POST
def memory_entities(request: HttpRequest, bank_id: str, memory_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id, "write")
    memory = memory_get(bank=bank, memory_id=memory_id)
    action = request.POST.get("action", "")
    entity_id = request.POST.get("entity_id", "")
    try:
        if action == "add":
            entity = memory_entity_add(memory=memory, name=request.POST.get("name", ""),
                                       entity_type=request.POST.get("entity_type", ""), actor=actor(request))
            messages.success(request, f"This memory now mentions {entity.name} ({entity.entity_type}).")
        elif action == "remove":
            memory_entity_remove(memory=memory, entity_id=entity_id, actor=actor(request))
            messages.success(request, "Entity removed from this memory.")
        elif action == "retype":
            entity = memory_entity_retype(memory=memory, entity_id=entity_id,
                                          entity_type=request.POST.get("entity_type", ""), actor=actor(request))
            messages.success(request, f"{entity.name} is now a {entity.entity_type}.")
        else:
            raise InvalidInput("must be add, remove or retype", field="action")
    except MemoryHubError as exc:
        messages.error(request, f"Nothing changed: {exc.message}")
    return redirect("curation:memory", bank_id=bank.bank_id, memory_id=memory.memory_id)
