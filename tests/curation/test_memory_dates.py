"""Editing a memory's dates on its page: when it happened (``occurred_at``, also cleared) and when its
source made it (``created_at``); ``retained_at`` stays this system's record. The change goes through the
memory-row owner, so the timeline and time-filtered recall follow it, the audit event holds the old and
new dates, bad dates are refused by name, and a tombstone is refused as for a text edit."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from banks.models import AuditEvent, Memory
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


@pytest.fixture
def trip(bank):
    return memory_retain(bank=bank, text="Alice flew to Lisbon for the conference.", actor="test",
                         occurred_at=datetime(2024, 6, 3, 12, tzinfo=UTC)).memory


def _edit(client, memory, **dates):
    return client.post(f"/banks/{memory.bank.bank_id}/memories/{memory.memory_id}/edit",
                       {"text": memory.text, "tags": "", "fact_type": memory.fact_type, "metadata": "{}",
                        "reason": "wrong date", **dates})


def _recall_ids(api, start, end):
    answer = api.post("/v1/recall", {"bank_id": "user-alice", "query": "Lisbon conference",
                                     "time_range": {"start": start, "end": end}}).json()
    return [h["memory_id"] for h in answer["hits"]]


def test_edited_dates_move_the_memory_on_the_timeline_and_in_recall(admin_client, api, trip):
    assert _recall_ids(api, "2024-06-01T00:00:00Z", "2024-06-30T00:00:00Z") == [trip.memory_id]
    form = admin_client.get(f"/banks/user-alice/memories/{trip.memory_id}/?edit=1").content.decode()
    assert 'value="2024-06-03T12:00:00+00:00"' in form
    retained = trip.retained_at
    response = _edit(admin_client, trip, occurred_at="2019-02-10T09:30:00+02:00",
                     created_at="2019-02-11")
    assert response.status_code == 302
    trip.refresh_from_db()
    assert trip.occurred_at == datetime(2019, 2, 10, 7, 30, tzinfo=UTC)
    assert trip.created_at == datetime(2019, 2, 11, tzinfo=UTC) and trip.retained_at == retained
    event = AuditEvent.objects.filter(action="memory.update", target_ids=[trip.memory_id]).latest("id")
    assert event.details["dates"]["occurred_at"] == ["2024-06-03T12:00:00+00:00", "2019-02-10T07:30:00+00:00"]
    assert set(event.details["fields"]) == {"occurred_at", "created_at"} and event.reason == "wrong date"
    timeline = admin_client.get("/banks/user-alice/timeline/").content.decode()
    assert "2019-02-10" in timeline and "2024-06-03" not in timeline
    assert _recall_ids(api, "2024-06-01T00:00:00Z", "2024-06-30T00:00:00Z") == []
    assert _recall_ids(api, "2019-02-01T00:00:00Z", "2019-02-28T00:00:00Z") == [trip.memory_id]


def test_an_emptied_occurred_date_is_cleared_and_an_absent_one_is_kept(admin_client, trip):
    assert _edit(admin_client, trip).status_code == 302  # an older form without the date fields
    trip.refresh_from_db()
    assert trip.occurred_at == datetime(2024, 6, 3, 12, tzinfo=UTC)
    assert _edit(admin_client, trip, occurred_at="").status_code == 302
    trip.refresh_from_db()
    assert trip.occurred_at is None
    assert "Lisbon" not in admin_client.get("/banks/user-alice/timeline/").content.decode()


@pytest.mark.parametrize(("field", "value", "says"), [
    ("occurred_at", "next tuesday", "is not a date"),
    ("occurred_at", "2024-02-30", "is not a date"),
    ("occurred_at", "0001-01-01T00:00:00+14:00", "date out of range"),
    ("created_at", "9999-12-31T23:59:59-12:00", "date out of range"),
    ("created_at", "", "always has a creation date"),
])
def test_bad_dates_are_refused_by_name(admin_client, trip, field, value, says):
    response = _edit(admin_client, trip, **{field: value})
    assert response.status_code == 422 and says in response.content.decode()
    trip.refresh_from_db()
    assert trip.occurred_at == datetime(2024, 6, 3, 12, tzinfo=UTC)


def test_a_tombstones_dates_are_refused(admin_client, bank, trip):
    memory_forget(bank=bank, actor="test", memory_ids=[trip.memory_id], reason="asked")
    response = _edit(admin_client, trip, occurred_at="2020-01-01")
    assert response.status_code == 409 and "tombstone cannot be edited" in response.content.decode()
    assert Memory.objects.get(pk=trip.pk).occurred_at == datetime(2024, 6, 3, 12, tzinfo=UTC)
