"""Every privileged action through every surface that offers it, with each role: the same answer.

A role is an operator's membership on the bank (viewer, curator, admin, or none) and, for the API
surfaces, a token holding the same permissions. An action is allowed exactly when the role holds the
permission banks.access says the action needs; what is checked is the effect (the memory erased, the
hold placed, ...), and a refusal is a 403 (or, for an operator with no role on the bank, a 404).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from banks.access import ROLE_PERMISSIONS
from banks.models import (
    ApiToken,
    Bank,
    BankMembership,
    BankRole,
    LegalHold,
    LifecyclePolicy,
    Memory,
    MentalModel,
    Observation,
)
from banks.services.directives import directive_create
from banks.services.holds import hold_set
from banks.services.memories import memory_retain
from banks.services.mental_models import mental_model_create, mental_model_refresh
from banks.services.observations import observation_create
from banks.services.tokens import token_create
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

B = "team-one"
ROLES = ["none", BankRole.VIEWER, BankRole.CURATOR, BankRole.ADMIN]


@dataclass
class World:
    bank: Bank
    memory: Memory
    role: str
    page: Client  # an operator with the role, logged in
    api: ApiClient  # a token with the role's permissions
    user: Any

    @property
    def memory_id(self) -> str:
        return self.memory.memory_id


def _world(role: str, django_user_model: Any) -> World:
    bank = Bank.objects.filter(bank_id=B).first() or __import__(
        "banks.services.banks", fromlist=["bank_create"]).bank_create(bank_id=B, actor="test")
    other = __import__("banks.services.banks", fromlist=["bank_create"]).bank_create(
        bank_id="team-two", actor="test", get_existing=True)
    memory = memory_retain(bank=bank, text="Alice asked to be forgotten.", actor="test").memory
    user = django_user_model.objects.create_user(username=f"op-{role}", password="pw-12345678", is_staff=True)
    # Staff with every model permission, so the admin site's own checks let the request reach ours.
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="banks"))
    if role != "none":
        BankMembership.objects.create(user=user, bank=bank, role=role)
    page = Client()
    page.force_login(user)
    perms = sorted(ROLE_PERMISSIONS.get(role, frozenset()))
    grants = [{"bank": B, "permissions": perms}] if perms else [{"bank": other.bank_id, "permissions": ["*"]}]
    _, secret = token_create(name=f"matrix-{role}", actor="test", grants=grants)
    return World(bank=bank, memory=memory, role=role, page=page, api=ApiClient(secret), user=user)


def _erased(w: World) -> bool:
    return not Memory.objects.filter(pk=w.memory.pk).exists()


def _forgotten(w: World) -> bool:
    row = Memory.objects.filter(pk=w.memory.pk).first()
    return row is None or row.forgotten_at is not None


def _held(w: World) -> bool:
    return LegalHold.objects.active().filter(bank=w.bank, hold_id="case-9").exists()


def _released(w: World) -> bool:
    return not LegalHold.objects.active().filter(bank=w.bank, hold_id="case-1").exists()


def _renamed(w: World) -> bool:
    return Bank.objects.get(pk=w.bank.pk).name == "Renamed"


def _deleted(w: World) -> bool:
    return not Bank.objects.active().filter(pk=w.bank.pk).exists()


def _lifecycle_ran(w: World) -> bool:
    from banks.models import Job

    return Job.objects.filter(bank=w.bank, kind="lifecycle").exists()


def _minted(w: World) -> bool:
    return ApiToken.objects.filter(name="minted-here").exists()


def _exported(w: World) -> bool:
    from django.conf import settings

    return any(Path(settings.MEMORYHUB_PORTABILITY_ROOTS).rglob("matrix.ama.jsonl"))


def _with_hold(w: World) -> None:
    hold_set(bank=w.bank, hold_id="case-1", reason="litigation", set_by="test", actor="test")


def _with_policy(w: World) -> None:
    LifecyclePolicy.objects.create(bank=w.bank, enabled=True, delete_after_days=3650)


def _admin_forget(w: World) -> Any:
    return w.page.post("/admin/banks/memory/", {"action": "forget_selected", "_selected_action": [w.memory.pk]})


# action -> (permission needed, effect (None: judged by the answer's status), setup, {surface: call})
ACTIONS: dict[str, tuple[str, Callable[[World], bool] | None, Callable[[World], None] | None,
                         dict[str, Callable[[World], Any]]]] = {
    "compliance erase": ("admin", _erased, _with_hold, {
        "rest": lambda w: w.api.post("/v1/forget", {"bank_id": B, "memory_ids": [w.memory_id], "compliance": True,
                                                    "reason": "erasure request"}),
        "memory form": lambda w: w.page.post(f"/banks/{B}/memories/{w.memory_id}/state", {
            "action": "forget", "reason": "erasure request", "compliance": "on"}),
        "bulk form": lambda w: w.page.post(f"/banks/{B}/memories/bulk", {
            "action": "forget", "ids": [w.memory_id], "reason": "erasure request", "compliance": "on",
            "confirm": "yes"}),
    }),
    "forget": ("forget", _forgotten, None, {
        "rest": lambda w: w.api.post("/v1/forget", {"bank_id": B, "memory_ids": [w.memory_id], "reason": "r"}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_forget", {"bank_id": B, "memory_ids": [w.memory_id]}),
        "agentos tool": lambda w: w.api.post("/v1/agent/memory_delete", {"bank_id": B, "traceId": w.memory_id}),
        "memory form": lambda w: w.page.post(f"/banks/{B}/memories/{w.memory_id}/state", {
            "action": "forget", "reason": "not needed"}),
        "bulk form": lambda w: w.page.post(f"/banks/{B}/memories/bulk", {
            "action": "forget", "ids": [w.memory_id], "reason": "not needed", "confirm": "yes"}),
        "admin action": _admin_forget,
    }),
    "wipe the bank's memories": ("admin", _forgotten, None, {
        "rest": lambda w: w.api.post("/v1/forget", {"bank_id": B, "scope": "all"}),
    }),
    "hold set": ("admin", _held, None, {
        "rest": lambda w: w.api.post(f"/v1/admin/banks/{B}/hold", {"hold_id": "case-9", "reason": "litigation"}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_hold_set", {"bank_id": B, "hold_id": "case-9",
                                                                          "reason": "litigation"}),
        "page": lambda w: w.page.post(f"/banks/{B}/holds", {"hold_id": "case-9", "reason": "litigation"}),
    }),
    "hold release": ("admin", _released, _with_hold, {
        "rest": lambda w: w.api.delete(f"/v1/admin/banks/{B}/hold/case-1"),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_hold_release", {"bank_id": B, "hold_id": "case-1"}),
        "page": lambda w: w.page.post(f"/banks/{B}/holds/case-1/release", {"reason": "settled"}),
    }),
    "bank settings": ("admin", _renamed, None, {
        "rest": lambda w: w.api.patch(f"/v1/banks/{B}", {"name": "Renamed"}),
        "page": lambda w: w.page.post(f"/banks/{B}/settings", {"name": "Renamed"}),
        "admin": lambda w: w.page.post(f"/admin/banks/bank/{w.bank.pk}/change/", {
            "bank_id": B, "name": "Renamed", "description": "", "dedup_threshold": "0.95", "config": "{}"}),
    }),
    "bank delete": ("admin", _deleted, None, {
        "rest": lambda w: w.api.delete(f"/v1/banks/{B}", {"confirm": B}),
        "page": lambda w: w.page.post(f"/banks/{B}/delete", {"confirm": B, "reason": "closing"}),
        # (The admin site deletes banks for superusers only: stricter than the role, on purpose.)
    }),
    "lifecycle run": ("admin", _lifecycle_ran, _with_policy, {
        "rest": lambda w: w.api.post("/v1/admin/lifecycle", {"bank_id": B}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_lifecycle", {"bank_id": B}),
        "page": lambda w: w.page.post(f"/banks/{B}/lifecycle/run"),
    }),
    "export": ("admin", _exported, None, {
        "rest": lambda w: w.api.post("/v1/export", {"bank_id": B, "path": "matrix.ama.jsonl"}),
    }),
    "import": ("admin", None, None, {
        "rest": lambda w: w.api.post("/v1/import", {"bank_id": B, "path": "matrix.ama.jsonl"}),
        "transfer page": lambda w: w.page.get(f"/banks/{B}/transfer/"),
    }),
    "token minting": ("write", _minted, None, {
        "page": lambda w: w.page.post("/tokens/new", {"name": "minted-here", "banks": B, "permissions": ["read"]}),
    }),
}

# The writes of the live layers, retain, push and merge: each service checks the caller itself
# (``by``), so a surface that forgot its own check would still be refused.
M, D = "m1", "directive:d1"


def _model(w: World) -> MentalModel:
    return MentalModel.objects.get(bank=w.bank, model_id=M)


def _directive(w: World) -> MentalModel:
    return MentalModel.objects.get(bank=w.bank, model_id=D)


def _observation_id(w: World) -> str:
    return Observation.objects.get(bank=w.bank).observation_id


def _with_model(w: World) -> None:
    mental_model_create(bank=w.bank, model_id=M, title="Prefs", content="## Summary\n\nOld.", actor="test")


def _with_two_revisions(w: World) -> None:
    _with_model(w)
    mental_model_refresh(model=_model(w), actor="test", content="## Summary\n\nNewer.")


def _with_directive(w: World) -> None:
    directive_create(bank=w.bank, rule_text="Answer in English.", actor="test", directive_id=D)


def _with_observation(w: World) -> None:
    observation_create(bank=w.bank, text="Alice likes tea.", actor="test", source_ids=[w.memory_id])


def _with_second_memory(w: World) -> None:
    memory_retain(bank=w.bank, text="Bob asked to be forgotten too.", actor="test", memory_id="second-one")


def _merged(w: World) -> bool:
    return Memory.objects.get(bank=w.bank, memory_id="second-one").merged_into_id == w.memory.pk


def _retained(w: World) -> bool:
    return Memory.objects.filter(bank=w.bank, text="Matrix retained.").exists()


def _model_revised(w: World) -> bool:
    return _model(w).revision > 1


def _model_reverted(w: World) -> bool:
    return _model(w).revision == 3 and "Old." in _model(w).content


def _model_deleted(w: World) -> bool:
    return _model(w).deleted_at is not None


def _directive_revised(w: World) -> bool:
    return _directive(w).revision > 1


def _mop(w: World, action: str, **extra: Any) -> Any:
    return w.page.post(f"/banks/{B}/models/{M}/action", {"action": action, **extra})


def _dch(w: World, action: str, **extra: Any) -> Any:
    return w.page.post(f"/banks/{B}/directives/save", {"directive_id": D, "action": action, **extra})


def _och(w: World, action: str, **extra: Any) -> Any:
    return w.page.post(f"/banks/{B}/observations/save", {"observation_id": _observation_id(w), "action": action,
                                                         **extra})


ACTIONS.update({
    "retain": ("write", _retained, None, {
        "rest": lambda w: w.api.post("/v1/retain", {"bank_id": B, "content": "Matrix retained."}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_retain", {"bank_id": B, "content": "Matrix retained."}),
        "agentos tool": lambda w: w.api.post("/v1/agent/memory_add", {"bank_id": B, "content": "Matrix retained."}),
        "page": lambda w: w.page.post(f"/banks/{B}/memories/new", {"text": "Matrix retained."}),
    }),
    "sync push": ("write", lambda w: Memory.objects.filter(bank=w.bank, memory_id="record-0001").exists(), None, {
        "rest": lambda w: w.api.post(f"/v1/banks/{B}/sync/push", {"records": [{"id": "record-0001",
                                                                                "text": "Pushed here."}]}),
    }),
    "merge": ("write", _merged, _with_second_memory, {
        "agentos tool": lambda w: w.api.post("/v1/agent/memory_merge", {"bank_id": B,
                                                                         "traceIds": [w.memory_id, "second-one"]}),
        "memory form": lambda w: w.page.post(f"/banks/{B}/memories/{w.memory_id}/merge", {"merge": ["second-one"]}),
        "page": lambda w: w.page.post(f"/banks/{B}/duplicates/action", {"action": "merge", "confirm": "1",
                                                                         "ids": [w.memory_id, "second-one"]}),
    }),
    "observation create": ("write", lambda w: Observation.objects.filter(bank=w.bank).exists(), None, {
        "rest": lambda w: w.api.post("/v1/observations", {"bank_id": B, "text": "Alice likes tea."}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_create_observation", {"bank_id": B,
                                                                                   "text": "Alice likes tea."}),
        "page": lambda w: w.page.post(f"/banks/{B}/observations/save", {"action": "create",
                                                                         "text": "Alice likes tea."}),
    }),
    "observation update": ("write", lambda w: Observation.objects.get(bank=w.bank).text == "Alice likes coffee.",
                           _with_observation, {
        "rest": lambda w: w.api.patch(f"/v1/observations/{_observation_id(w)}", {"bank_id": B,
                                                                                 "text": "Alice likes coffee."}),
        "page": lambda w: _och(w, "update", text="Alice likes coffee."),
    }),
    "observation delete": ("forget", lambda w: Observation.objects.get(bank=w.bank).deleted_at is not None,
                           _with_observation, {
        "rest": lambda w: w.api.delete(f"/v1/observations/{_observation_id(w)}", {"bank_id": B}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_delete_observation", {
            "bank_id": B, "observation_id": _observation_id(w)}),
        "page": lambda w: _och(w, "delete"),
    }),
    "model create": ("write", lambda w: MentalModel.objects.filter(bank=w.bank, model_id=M).exists(), None, {
        "rest": lambda w: w.api.post("/v1/mental-models", {"bank_id": B, "model_id": M, "title": "Prefs",
                                                           "content": "## Summary\n\nNew."}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_create_mental_model", {
            "bank_id": B, "model_id": M, "title": "Prefs", "content": "## Summary\n\nNew."}),
        "page": lambda w: w.page.post(f"/banks/{B}/models/new", {"model_id": M, "title": "Prefs",
                                                                  "content": "## Summary\n\nNew."}),
    }),
    "model update": ("write", _model_revised, _with_model, {
        "rest": lambda w: w.api.post(f"/v1/mental-models/{M}/update", {
            "bank_id": B, "operations": [{"op": "add_section", "heading": "Added"}]}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_update_mental_model", {
            "bank_id": B, "model_id": M, "operations": [{"op": "add_section", "heading": "Added"}]}),
        "page": lambda w: w.page.post(f"/banks/{B}/models/{M}/edit", {"op": "add_section", "heading": "Added"}),
    }),
    "model refresh": ("write", _model_revised, _with_model, {
        "rest": lambda w: w.api.post(f"/v1/mental-models/{M}/refresh", {"bank_id": B,
                                                                        "content": "## Summary\n\nNew."}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_refresh_mental_model", {
            "bank_id": B, "model_id": M, "content": "## Summary\n\nNew.", "new_source_ids": [w.memory_id]}),
        "page": lambda w: _mop(w, "refresh", content="## Summary\n\nNew."),
    }),
    "model revert": ("write", _model_reverted, _with_two_revisions, {
        "rest": lambda w: w.api.post(f"/v1/mental-models/{M}/revert", {"bank_id": B, "revision": 1}),
        "page": lambda w: _mop(w, "revert", to=1),
    }),
    "model delete": ("forget", _model_deleted, _with_model, {
        "rest": lambda w: w.api.delete(f"/v1/mental-models/{M}", {"bank_id": B}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_delete_mental_model", {"bank_id": B, "model_id": M}),
        "page": lambda w: _mop(w, "delete"),
    }),
    "directive create": ("write", lambda w: MentalModel.objects.filter(bank=w.bank, kind="directive").exists(),
                         None, {
        "rest": lambda w: w.api.post("/v1/directives", {"bank_id": B, "rule_text": "Answer in English."}),
        "agent tool": lambda w: w.api.post("/v1/agent/memory_create_directive", {"bank_id": B,
                                                                                 "rule_text": "Answer in English."}),
        "page": lambda w: w.page.post(f"/banks/{B}/directives/save", {"rule_text": "Answer in English."}),
    }),
    "directive update": ("write", _directive_revised, _with_directive, {
        "rest": lambda w: w.api.patch(f"/v1/directives/{D}", {"bank_id": B, "rule_text": "Answer in French."}),
        "page": lambda w: _dch(w, "update", rule_text="Answer in French."),
    }),
    "directive deactivate": ("write", lambda w: not _directive(w).is_active, _with_directive, {
        "rest": lambda w: w.api.post(f"/v1/directives/{D}/deactivate", {"bank_id": B}),
        "page": lambda w: _dch(w, "deactivate"),
    }),
    "directive delete": ("forget", lambda w: _directive(w).deleted_at is not None, _with_directive, {
        "rest": lambda w: w.api.delete(f"/v1/directives/{D}", {"bank_id": B}),
        "page": lambda w: _dch(w, "delete"),
    }),
})

CASES = [pytest.param(action, surface, role, id=f"{action}-{surface}-{role}")
         for action, (_, _, _, surfaces) in ACTIONS.items() for surface in surfaces for role in ROLES]


@pytest.mark.parametrize(("action", "surface", "role"), CASES)
def test_every_surface_gives_each_role_the_same_answer(action, surface, role, django_user_model, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    permission, effect, setup, surfaces = ACTIONS[action]
    world = _world(role, django_user_model)
    if setup is not None:
        setup(world)
    allowed = permission in ROLE_PERMISSIONS.get(role, frozenset())
    response = surfaces[surface](world)
    assert response.status_code < 500, response.content[:500]
    if effect is None:  # an answer, not a change: allowed is anything but a refusal
        assert (response.status_code not in (403, 404)) is allowed, (response.status_code, response.content[:300])
    else:
        assert effect(world) is allowed, (response.status_code, response.content[:300])
    if not allowed and surface in ("rest", "agent tool", "agentos tool"):
        assert response.status_code == 403, response.content[:300]
    elif not allowed and surface in ("memory form", "bulk form", "page"):
        assert response.status_code in (403, 404), response.content[:300]


def test_the_compliance_erase_a_curator_did_on_a_held_bank_is_refused(django_user_model):
    """The reported case: a curator's memory form with compliance=on erased a held bank for good."""
    world = _world(BankRole.CURATOR, django_user_model)
    _with_hold(world)
    response = world.page.post(f"/banks/{B}/memories/{world.memory_id}/state", {
        "action": "forget", "reason": "erasure request", "compliance": "on"})
    assert response.status_code == 403
    assert Memory.objects.filter(pk=world.memory.pk, forgotten_at__isnull=True).exists()


@pytest.mark.parametrize("role", [BankRole.CURATOR, BankRole.ADMIN])
def test_the_compliance_box_is_offered_only_to_who_may_erase(role, django_user_model):
    world = _world(role, django_user_model)
    page = world.page.get(f"/banks/{B}/memories/{world.memory_id}/").content.decode()
    preview = world.page.post(f"/banks/{B}/memories/bulk", {"action": "forget", "ids": [world.memory_id],
                                                             "reason": "r"}).content.decode()
    offered = role == BankRole.ADMIN
    assert ('name="compliance"' in page) is offered
    assert ('name="compliance"' in preview) is offered
