"""Permission checks that once let a caller further than its grants: each bank of a multi-bank
debug recall, evidence from another bank, listings for tokens without read."""

from __future__ import annotations

import pytest

from banks.models import ObservationEvidence
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_banks(make_bank):
    alice, bob = make_bank("user-alice"), make_bank("user-bob")
    memory_retain(bank=alice, text="Alice likes jazz.", actor="test")
    secret = memory_retain(bank=bob, text="Bob's door code is 4711.", actor="test").memory
    return alice, bob, secret


@pytest.mark.parametrize("body", [
    {"query": "door code", "banks": ["user-alice", "user-bob"]},
    {"query": "door code", "bank_id": "user-alice", "banks": ["user-alice", "user-bob"]},
    {"query": "door code", "bank_id": "user-alice", "banks": ["user-bob"]},
])
def test_debug_recall_checks_every_bank_it_searches(api_for, two_banks, body):
    alice_only = api_for({"user-alice": ["read"]})
    for path in ("/v1/debug/recall", "/v1/recall"):
        response = alice_only.post(path, body)
        assert response.status_code == 403, (path, response.content)
        assert "user-bob" in response.json()["detail"]


def test_debug_recall_over_banks_the_caller_may_read_counts_them_all(api_for, two_banks):
    both = api_for({"user-*": ["read"]})
    response = both.post("/v1/debug/recall", {"query": "jazz door code", "banks": ["user-alice", "user-bob"]})
    assert response.status_code == 200, response.content
    assert response.json()["result_count"] == 2
    assert set(response.json()["trace"]["strategies_used"]) == {"user-alice", "user-bob"}


def test_observation_evidence_from_another_bank_is_unknown_here(api_for, two_banks):
    """Another bank's memory id is kept as an unresolved reference, exactly like an id that exists
    nowhere: no link to the other bank's memory, and nothing in the answer tells the two apart."""
    alice, _, secret = two_banks
    writer = api_for({"user-*": ["read", "write"]})
    created = writer.post("/v1/observations", {"bank_id": "user-alice", "text": "Codes are four digits.",
                                               "source_ids": [secret.memory_id]})
    nowhere = writer.post("/v1/observations", {"bank_id": "user-alice", "text": "Codes are short.",
                                               "source_ids": ["0123456789abcdef"]})
    assert created.status_code == nowhere.status_code == 200, created.content
    assert created.json()["unresolved_source_ids"] == [secret.memory_id]
    assert nowhere.json()["unresolved_source_ids"] == ["0123456789abcdef"]
    shape = {k for k in created.json() if k not in ("id", "text", "source_ids", "unresolved_source_ids",
                                                     "created_at", "updated_at", "evidence_timestamps")}
    assert {k: created.json()[k] for k in shape} == {k: nowhere.json()[k] for k in shape}

    own = memory_retain(bank=alice, text="Alice plays sax.", actor="test").memory
    ok = writer.post("/v1/observations", {"bank_id": "user-alice", "text": "Music matters to Alice.",
                                          "source_ids": [own.memory_id]})
    assert ok.status_code == 200, ok.content
    assert ok.json()["unresolved_source_ids"] == []
    attached = writer.patch(f"/v1/observations/{ok.json()['id']}",
                            {"bank_id": "user-alice", "add_source_ids": [secret.memory_id]})
    assert attached.status_code == 200, attached.content
    assert attached.json()["unresolved_source_ids"] == [secret.memory_id]
    # The same through the agent tool, which shares the service.
    tool = writer.post("/v1/agent/memory_create_observation", {"bank_id": "user-alice", "text": "Codes.",
                                                                "source_ids": [secret.memory_id]})
    assert tool.status_code == 200, tool.content
    # Never a link across banks: every reference to Bob's memory is an unresolved one on Alice's side.
    assert not ObservationEvidence.objects.filter(memory=secret).exists()
    refs = ObservationEvidence.objects.filter(memory_ref=secret.memory_id)
    assert refs.count() == 3 and {r.observation.bank_id for r in refs} == {alice.pk}
    assert not refs.filter(memory__isnull=False).exists()


@pytest.mark.parametrize("path", ["/v1/banks", "/v1/agent/tools"])
def test_listings_need_read(api_for, two_banks, path):
    write_only = api_for({"user-alice": ["write"]})
    refused = write_only.get(path)
    assert refused.status_code == 403, refused.content
    assert refused.json()["error"]["code"] == "access_denied"
    reader = api_for({"user-alice": ["read"], "user-bob": ["write"]})
    allowed = reader.get(path)
    assert allowed.status_code == 200, allowed.content
    if path == "/v1/banks":
        # Only the banks it may read are named; a write grant does not reveal a bank.
        assert [b["bank_id"] for b in allowed.json()["banks"]] == ["user-alice"]
