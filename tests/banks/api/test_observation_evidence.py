"""Observation evidence given as ids that are not memories of the bank (seed 001's ``evidence=["mem-1",
"mem-2"]``): accepted, kept as unresolved references, shown as such; own memories link as before."""

from __future__ import annotations

import pytest

from agents.toolbox import run_tool
from banks.access import principal_for_token
from banks.api.auth import token_lookup
from banks.models import AuditEvent, BankMembership, Observation, ObservationEvidence
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db
BANK = {"bank_id": "user-alice"}


def test_the_seed_example_is_accepted_and_its_ids_kept_unresolved(api, bank):
    own = memory_retain(bank=bank, text="Alice skipped the 9:00 stand-up again.", actor="test").memory_id
    created = api.post("/v1/observations", {**BANK, "text": "Prefers async stand-ups over live meetings.",
                                            "evidence": ["mem-1", own, "mem-2"], "scope": "bank"})
    assert created.status_code == 200, created.content
    body = created.json()
    assert sorted(body["source_ids"]) == sorted(["mem-1", own, "mem-2"])
    assert body["unresolved_source_ids"] == ["mem-1", "mem-2"]
    observation = Observation.objects.get(observation_id=body["id"])
    links = {e.memory_ref: e.memory for e in ObservationEvidence.objects.filter(observation=observation)}
    assert links["mem-1"] is None and links["mem-2"] is None and links[own].memory_id == own
    # Read back the same way, in the list and one by one.
    assert api.get(f"/v1/observations/{body['id']}", BANK).json()["unresolved_source_ids"] == ["mem-1", "mem-2"]
    listed = api.get("/v1/observations", BANK).json()["observations"]
    assert listed[0]["unresolved_source_ids"] == ["mem-1", "mem-2"] and len(listed[0]["source_ids"]) == 3
    event = AuditEvent.objects.get(action="observation.create", target_ids=[body["id"]])
    assert event.details["unresolved_source_ids"] == ["mem-1", "mem-2"]


def test_the_agent_tool_takes_the_seed_evidence_too(make_token, bank):
    principal = principal_for_token(token_lookup(make_token()))
    answer = run_tool(principal, "memory_create_observation", {
        **BANK, "text": "Prefers async stand-ups over live meetings.", "evidence": ["mem-1", "mem-2"]})
    assert answer["observation"]["unresolved_source_ids"] == ["mem-1", "mem-2"]


@pytest.mark.parametrize("ids", [[""], ["x" * 256], "mem-1", [1]])
def test_malformed_evidence_is_a_400(api, bank, ids):
    response = api.post("/v1/observations", {**BANK, "text": "x y z", "source_ids": ids})
    assert response.status_code in (400, 422), response.content
    assert "source_ids" in response.json()["detail"]
    assert not Observation.objects.exists()


def test_the_operator_page_lists_unresolved_references(api, bank, operator, operator_client):
    BankMembership.objects.create(bank=bank, user=operator, role="curator")
    own = memory_retain(bank=bank, text="Alice skipped the stand-up.", actor="test").memory_id
    api.post("/v1/observations", {**BANK, "text": "Prefers async stand-ups.", "evidence": ["mem-1", own]})
    page = operator_client.get("/banks/user-alice/observations/").content.decode()
    assert "mem-1 (unresolved)" in page and "1 unresolved evidence reference:" in page
    assert f'/banks/user-alice/memories/{own}' in page or f"{own}</a>" in page


@pytest.mark.parametrize("how", [{"erase": True}, {"compliance": True, "reason": "erasure request 7"}])
def test_erased_sources_stay_named_in_the_evidence(bank, how):
    """An erase (tombstone) and a compliance forget (row removed) both keep the evidence's memory id as
    text, detached from the row, and invalidate the observation that cites it."""
    from banks.services.forget import memory_forget
    from banks.services.observations import observation_create

    kept = memory_retain(bank=bank, text="Alice moved the stand-up to 10:00.", actor="test").memory_id
    gone = memory_retain(bank=bank, text="Alice skipped the 9:00 stand-up again.", actor="test").memory_id
    observation = observation_create(bank=bank, text="Prefers later stand-ups.", source_ids=[kept, gone],
                                     actor="test")
    memory_forget(bank=bank, memory_ids=[gone], actor="test", **how)
    links = {e.memory_ref: e.memory_id for e in ObservationEvidence.objects.filter(observation=observation)}
    assert set(links) == {kept, gone}
    assert links[gone] is None and links[kept] is not None
    observation.refresh_from_db()
    assert observation.invalidated_at is not None
