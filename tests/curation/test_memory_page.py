"""The memory page: near-duplicates are cosine neighbours above the bank's threshold, shown as a
percentage; the page reads a bounded number of queries and runs no recall."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from banks.models import AuditEvent, BankMembership
from banks.selectors.neighbours import memory_neighbours, near_duplicate_threshold
from banks.services.memories import memory_retain
from banks.services.memory_edit import memory_update
from banks.services.observations import observation_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def trio(bank):
    a = memory_retain(bank=bank, text="Alice Smith likes jazz and blues.", actor="test", tags=["music"]).memory
    b = memory_retain(bank=bank, text="Alice Smith likes jazz and blues music.", actor="test").memory
    c = memory_retain(bank=bank, text="The invoice service runs on Postgres in Berlin.", actor="test").memory
    return a, b, c


def test_neighbours_are_cosine_similar_and_unrelated_memories_are_not(bank, trio):
    a, b, c = trio
    near = memory_neighbours(a, threshold=near_duplicate_threshold(bank))
    assert [n.memory_id for n in near] == [b.memory_id]
    assert 0.8 < near[0].similarity < 1 and near[0].percent == int(near[0].similarity * 100)
    assert memory_neighbours(c, threshold=near_duplicate_threshold(bank)) == []


def test_the_threshold_follows_the_bank(bank, trio):
    a, b, _ = trio
    bank.config = {"near_duplicate_threshold": 0.999}
    bank.save()
    assert near_duplicate_threshold(bank) == 0.999
    assert memory_neighbours(a, threshold=near_duplicate_threshold(bank)) == []


def test_memory_page_shows_similarity_percent_and_no_unrelated_merge(operator_client, operator, bank, trio):
    a, b, c = trio
    BankMembership.objects.create(user=operator, bank=bank, role="curator")
    page = operator_client.get(f"/banks/user-alice/memories/{a.memory_id}/").content.decode()
    near = memory_neighbours(a, threshold=near_duplicate_threshold(bank))[0]
    assert f"{near.percent}%" in page and f'value="{b.memory_id}"' in page
    assert f'value="{c.memory_id}"' not in page


def test_memory_page_stays_within_ten_queries(operator_client, operator, bank, trio):
    a, b, _ = trio
    BankMembership.objects.create(user=operator, bank=bank, role="curator")
    observation_create(bank=bank, text="Alice loves jazz.", actor="test", source_ids=[a.memory_id])
    for i in range(5):
        memory_update(memory=a, actor="test", tags=["music", f"t{i}"])
    AuditEvent.objects.bulk_create(AuditEvent(bank=bank, bank_ref="user-alice", actor="x", action="noise",
                                              target_ids=[f"other-{i}"]) for i in range(300))
    url = f"/banks/user-alice/memories/{a.memory_id}/"
    operator_client.get(url)  # warm the session
    with CaptureQueriesContext(connection) as queries:
        response = operator_client.get(url)
    assert response.status_code == 200
    sql = [q["sql"] for q in queries.captured_queries]
    assert len(sql) <= 10, "\n".join(sql)
    assert not any("ts_rank_cd" in q or "plainto_tsquery" in q for q in sql)  # no recall on this page
    page = response.content.decode()
    assert "Alice loves jazz." in page and page.count("memory.update") == 5


def test_forget_needs_a_reason_and_keeps_the_page(admin_client_for, bank, trio):
    a, _, _ = trio
    client = admin_client_for()
    response = client.post(f"/banks/user-alice/memories/{a.memory_id}/state", {"action": "forget", "reason": ""})
    assert response.status_code == 422 and "Say why this memory is forgotten." in response.content.decode()
    a.refresh_from_db()
    assert a.forgotten_at is None
    response = client.post(f"/banks/user-alice/memories/{a.memory_id}/state",
                           {"action": "forget", "reason": "asked by the user"})
    assert response.status_code == 302
    a.refresh_from_db()
    assert a.forgotten_at is not None
    assert AuditEvent.objects.filter(action="memory.forget", reason="asked by the user").exists()


@pytest.fixture
def admin_client_for(django_user_model):
    from django.test import Client

    def make():
        client = Client()
        client.force_login(django_user_model.objects.create_superuser(username="root2", password="pw"))
        return client

    return make
