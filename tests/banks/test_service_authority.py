"""The services check the caller themselves (``by``), whatever surface called them: a caller one
permission short is refused by the service and nothing changes; ``None`` (the server's own authority: a
command, a task) is not checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from banks.access import PERMISSIONS, Principal
from banks.models import Bank, Memory, MentalModel, Observation
from banks.services.banks import bank_create
from banks.services.directives import directive_create, directive_update
from banks.services.memories import memory_retain
from banks.services.mental_models import (
    mental_model_apply_delta,
    mental_model_create,
    mental_model_delete,
    mental_model_refresh,
    mental_model_revert,
)
from banks.services.merge import duplicates_dismiss, memory_merge
from banks.services.observations import observation_create, observation_delete, observation_update
from banks.services.sync import sync_push
from memoryhub.errors import AccessDenied

pytestmark = pytest.mark.django_db
B = "svc-bank"


def _bank() -> Bank:
    bank = bank_create(bank_id=B, actor="test")
    memory_retain(bank=bank, text="Alice drinks tea.", actor="test", memory_id="mem-a")
    memory_retain(bank=bank, text="Bob rides a bike.", actor="test", memory_id="mem-b")
    mental_model_create(bank=bank, model_id="m1", title="Prefs", content="## A\n\nOne.", actor="test")
    mental_model_refresh(model=_model(bank), actor="test", content="## A\n\nTwo.")
    directive_create(bank=bank, rule_text="Answer in English.", actor="test", directive_id="d1")
    observation_create(bank=bank, text="Alice likes tea.", actor="test", source_ids=["mem-a"])
    return bank


def _model(bank: Bank, model_id: str = "m1") -> MentalModel:
    return MentalModel.objects.get(bank=bank, model_id=model_id)


def _observation(bank: Bank) -> Observation:
    return Observation.objects.get(bank=bank)


# name -> (permission the service needs, call(bank, by))
CALLS: dict[str, tuple[str, Callable[[Bank, Principal | None], Any]]] = {
    "memory_retain": ("write", lambda b, by: memory_retain(bank=b, text="A new fact.", actor="t", by=by)),
    "sync_push": ("write", lambda b, by: sync_push(bank=b, actor="t", records=[{"id": "record-01",
                                                                                "text": "Pushed."}], by=by)),
    "memory_merge": ("write", lambda b, by: memory_merge(bank=b, memory_ids=["mem-a", "mem-b"], actor="t", by=by)),
    "duplicates_dismiss": ("write", lambda b, by: duplicates_dismiss(bank=b, memory_ids=["mem-a", "mem-b"],
                                                                     actor="t", by=by)),
    "observation_create": ("write", lambda b, by: observation_create(bank=b, text="Bob bikes.", actor="t", by=by)),
    "observation_update": ("write", lambda b, by: observation_update(observation=_observation(b), actor="t",
                                                                     text="Alice likes coffee.", by=by)),
    "observation_delete": ("forget", lambda b, by: observation_delete(observation=_observation(b), actor="t",
                                                                      by=by)),
    "mental_model_create": ("write", lambda b, by: mental_model_create(bank=b, model_id="m2", title="T",
                                                                       content="x", actor="t", by=by)),
    "mental_model_refresh": ("write", lambda b, by: mental_model_refresh(model=_model(b), actor="t",
                                                                         content="## A\n\nThree.", by=by)),
    "mental_model_apply_delta": ("write", lambda b, by: mental_model_apply_delta(
        model=_model(b), operations=[{"op": "add_section", "heading": "New"}], actor="t", by=by)),
    "mental_model_revert": ("write", lambda b, by: mental_model_revert(model=_model(b), to_revision=1, actor="t",
                                                                       by=by)),
    "mental_model_delete": ("forget", lambda b, by: mental_model_delete(model=_model(b), actor="t", by=by)),
    "directive_create": ("write", lambda b, by: directive_create(bank=b, rule_text="Be brief.", actor="t", by=by)),
    "directive_update": ("write", lambda b, by: directive_update(directive=_model(b, "d1"), actor="t",
                                                                 is_active=False, by=by)),
}


def _state(bank: Bank) -> tuple[Any, ...]:
    return (sorted(Memory.objects.filter(bank=bank).values_list("memory_id", "text", "archived_at", "metadata")),
            sorted(MentalModel.objects.filter(bank=bank).values_list("model_id", "revision", "is_active",
                                                                       "deleted_at")),
            sorted(Observation.objects.filter(bank=bank).values_list("observation_id", "text", "deleted_at")))


@pytest.mark.parametrize("name", CALLS)
def test_a_caller_short_of_the_permission_is_refused_by_the_service(name):
    permission, call = CALLS[name]
    bank = _bank()
    # Everything but the one permission the operation needs (and admin, which holds them all).
    short = Principal(label="token:short", grants=[(B, frozenset(PERMISSIONS) - {permission, "admin"})])
    before = _state(bank)
    with pytest.raises(AccessDenied):
        call(bank, short)
    assert _state(bank) == before


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("by", ["holder", "server"])
def test_a_caller_holding_it_and_the_server_itself_go_through(name, by):
    permission, call = CALLS[name]
    bank = _bank()
    before = _state(bank)
    call(bank, Principal(label="token:enough", grants=[(B, frozenset({permission}))]) if by == "holder" else None)
    assert _state(bank) != before
