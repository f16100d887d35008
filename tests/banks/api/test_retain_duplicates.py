"""A near-duplicate refusal names what it collided with, look-alikes about other people are stored, and a
client can store anyway (``allow_duplicate``)."""

from __future__ import annotations

import pytest

from banks.models import Bank, Memory

pytestmark = pytest.mark.django_db

NOAH = "Noah Smith reported a broken laptop to the helpdesk on March 3, 2026 and paid $250 for the repair."
LIAM = "Liam Brown reported a broken laptop to the helpdesk on March 3, 2026 and paid $250 for the repair."
NOAH_AGAIN = "On March 3, 2026 Noah Smith reported a broken laptop to the helpdesk and paid $250 for the repair."


def retain(api, content, **extra):
    response = api.post("/v1/retain", {"content": content, "bank_id": "user-alice", **extra})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def strict(bank):
    Bank.objects.filter(pk=bank.pk).update(dedup_threshold=0.85)
    bank.refresh_from_db()
    return bank


def test_another_persons_lookalike_report_is_stored(api, strict):
    first = retain(api, NOAH)
    other = retain(api, LIAM)
    assert other["stored"] is True and other["memory_id"] != first["memory_id"]


def test_a_refusal_names_the_existing_memory_its_text_and_similarity(api, strict):
    first = retain(api, NOAH)
    again = retain(api, NOAH_AGAIN)
    assert again["stored"] is False and again["deduplicated"] is True
    assert again["duplicate_of"] == first["memory_id"] and again["duplicate_text"] == NOAH
    assert 0.85 <= again["similarity"] < 1


def test_allow_duplicate_stores_a_near_duplicate_but_never_the_same_text(api, strict):
    first = retain(api, NOAH)
    kept = retain(api, NOAH_AGAIN, allow_duplicate=True)
    assert kept["stored"] is True and kept["memory_id"] != first["memory_id"]
    same = retain(api, NOAH, allow_duplicate=True)
    assert same["stored"] is False and same["duplicate_of"] == first["memory_id"] and same["similarity"] == 1.0
    assert Memory.objects.count() == 2


def test_consolidation_merges_true_duplicates_but_never_lookalikes(strict):
    from agents.services.consolidate import agent_memory_reflect
    from banks.services.memories import memory_retain

    liam = memory_retain(bank=strict, text=LIAM, actor="test").memory  # the oldest: looked at first
    noah = memory_retain(bank=strict, text=NOAH, actor="test").memory
    again = memory_retain(bank=strict, text=NOAH_AGAIN, actor="test", near_dedup=False).memory
    counts = agent_memory_reflect(bank=strict, actor="test")
    assert counts["merged"] == 1
    live = set(Memory.objects.live().values_list("pk", flat=True))
    assert noah.pk in live and liam.pk in live and again.pk not in live
