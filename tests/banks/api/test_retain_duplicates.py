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


def test_a_near_duplicate_asking_for_a_taken_id_is_answered_as_a_duplicate(api, strict):
    # With the extraction local the only look is the one after the insert, which the taken id stops:
    # the answer is still the duplicate, as when a look ran before the insert.
    first = retain(api, NOAH, memory_id="ticket-1")
    again = retain(api, NOAH_AGAIN, memory_id="ticket-1")
    assert again["stored"] is False and again["duplicate_of"] == first["memory_id"] == "ticket-1"
    taken = api.post("/v1/retain", {"content": LIAM, "bank_id": "user-alice", "memory_id": "ticket-1"})
    assert taken.status_code == 409


def test_a_refused_near_duplicate_leaves_no_row_mention_count_or_event(api, strict):
    from banks.models import AuditEvent, Entity, MemoryEntity

    retain(api, NOAH)
    counts = dict(Entity.objects.values_list("entity_id", "mention_count"))
    assert counts and retain(api, NOAH_AGAIN)["stored"] is False
    assert Memory.objects.count() == 1 and MemoryEntity.objects.count() == sum(counts.values())
    assert dict(Entity.objects.values_list("entity_id", "mention_count")) == counts
    assert AuditEvent.objects.filter(action="memory.retain").count() == 1


def test_a_remote_extractor_is_not_asked_about_a_near_duplicate(api, strict, monkeypatch):
    from banks.providers.extractive import ExtractiveLanguageModel

    asked: list[str] = []

    class Remote:  # not the local extractive model: a chat model's extraction is a remote call
        name = "openai:test"

        def extract_entities(self, text):
            asked.append(text)
            return ExtractiveLanguageModel().extract_entities(text)

    monkeypatch.setattr("banks.services.memories.get_llm", Remote)
    retain(api, NOAH)
    assert retain(api, NOAH_AGAIN)["stored"] is False
    assert asked == [NOAH]
