from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from banks.models import AuditEvent, Memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ids(api):
    def retain(text, **extra):
        return api.post("/v1/retain", {"content": text, "bank_id": "user-alice", **extra}).json()["memory_id"]

    return {
        "a": retain("Alice likes jazz.", tags=["music"], occurred_at="2020-01-01T00:00:00Z"),
        "b": retain("Alice plays the cello.", tags=["music", "deprecated"], occurred_at="2023-06-01T00:00:00Z"),
        "c": retain("Alice lives in Porto.", tags=["home"]),
    }


def live_ids():
    return set(Memory.objects.live().values_list("memory_id", flat=True))


def test_forget_by_ids(api, ids):
    body = api.post("/v1/forget", {"bank_id": "user-alice", "memory_ids": [ids["a"], "missing"]}).json()
    assert body == {"deleted_count": 1, "archived_count": 0}
    assert live_ids() == {ids["b"], ids["c"]}
    # A tombstone stays for history; the text is still there for as_of queries.
    assert Memory.objects.get(memory_id=ids["a"]).forgotten_at is not None


def test_forget_by_tags(api, ids):
    body = api.post("/v1/forget", {"bank_id": "user-alice", "tags": ["deprecated"]}).json()
    assert body["deleted_count"] == 1
    assert live_ids() == {ids["a"], ids["c"]}


def test_forget_before_date_uses_occurred_at(api, ids):
    body = api.post("/v1/forget", {"bank_id": "user-alice", "before_date": "2022-01-01"}).json()
    assert body["deleted_count"] == 1
    assert ids["a"] not in live_ids()


def test_forget_scope_all_needs_admin(api_for, ids):
    forget_only = api_for({"user-alice": ["forget"]})
    assert forget_only.post("/v1/forget", {"bank_id": "user-alice", "scope": "all"}).status_code == 403
    admin = api_for({"user-alice": ["admin"]})
    assert admin.post("/v1/forget", {"bank_id": "user-alice", "scope": "all"}).json()["deleted_count"] == 3
    assert live_ids() == set()


def test_archive_is_reversible(api, ids):
    body = api.post("/v1/forget", {"bank_id": "user-alice", "memory_ids": [ids["a"]], "archive": True}).json()
    assert body == {"deleted_count": 0, "archived_count": 1}
    from banks.services.memory_archiving import memory_restore

    memory_restore(memory=Memory.objects.get(memory_id=ids["a"]), actor="test")
    assert ids["a"] in live_ids()


def test_compliance_forget_erases_and_keeps_only_the_audit_event(api, ids):
    body = api.post("/v1/forget", {"bank_id": "user-alice", "memory_ids": [ids["c"]], "compliance": True,
                                   "reason": "GDPR erasure request #4821"}).json()
    assert body["deleted_count"] == 1
    assert not Memory.objects.filter(memory_id=ids["c"]).exists()
    event = AuditEvent.objects.get(action="memory.erase")
    assert event.compliance is True and event.reason == "GDPR erasure request #4821"
    assert event.target_ids == [ids["c"]]
    assert "Porto" not in str(event.details)


def test_compliance_forget_without_reason_is_a_400(api, ids):
    response = api.post("/v1/forget", {"bank_id": "user-alice", "memory_ids": [ids["c"]], "compliance": True})
    assert response.status_code == 400 and "reason" in response.json()["detail"]
    assert ids["c"] in live_ids()


def test_forget_needs_a_criterion(api, ids):
    response = api.post("/v1/forget", {"bank_id": "user-alice"})
    assert response.status_code == 400
    assert "memory_ids" in response.json()["detail"]


def test_forgotten_text_can_be_retained_again(api, ids):
    api.post("/v1/forget", {"bank_id": "user-alice", "memory_ids": [ids["a"]]})
    again = api.post("/v1/retain", {"content": "Alice likes jazz.", "bank_id": "user-alice"}).json()
    assert again["stored"] is True and again["memory_id"] != ids["a"]


def test_every_forget_writes_an_audit_event(api, ids):
    api.post("/v1/forget", {"bank_id": "user-alice", "tags": ["music"], "reason": "cleanup"})
    event = AuditEvent.objects.filter(action="memory.forget").get()
    assert set(event.target_ids) == {ids["a"], ids["b"]} and event.reason == "cleanup"
    assert event.actor.startswith("token:")
    assert event.created_at <= timezone.now() + timedelta(seconds=1)
