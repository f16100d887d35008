"""Auto-ingest of conversation turns, end to end on a real worker."""

from __future__ import annotations

import pytest

from agents.services.ingest import ingest_settings, ingest_turn
from banks.models import Memory
from banks.services.memories import memory_retain
from tests.conftest import ApiClient
from tests.worker import wait_for


@pytest.mark.worker
def test_a_turn_is_ingested_on_the_worker(celery_worker, make_bank, make_token):
    make_bank("user-alice")
    client = ApiClient(make_token({"user-alice": ["write", "read"]}))
    response = client.post("/v1/ingest/turn", {
        "bank_id": "user-alice",
        "user": "I prefer green tea over coffee. I will travel to Lisbon next week. What time is it?",
        "assistant": "Noted. It is noon."})
    assert response.status_code == 202 and response.json()["queued"] is True
    turn_id = response.json()["turn_id"]
    def whole_turn() -> list[Memory] | None:
        # The worker stores the facts one by one: wait for the whole turn, not its first fact.
        found = list(Memory.objects.filter(metadata__source_turn=turn_id))
        return found if len(found) >= 2 else None

    rows = wait_for(whole_turn, timeout=60)
    texts = {m.text for m in rows}
    assert "I prefer green tea over coffee." in texts and "I will travel to Lisbon next week." in texts
    assert "What time is it?" not in texts  # questions are not facts
    tea = next(m for m in rows if "green tea" in m.text)
    assert tea.tags == ["user_preference"] and tea.metadata["importance"] >= 0.4 and tea.source == "auto-ingest"


@pytest.mark.django_db
def test_threshold_max_per_turn_and_near_duplicates(make_bank):
    bank = make_bank("user-alice", config={"auto_ingest": {"importance_threshold": 0.65, "max_facts_per_turn": 1}})
    assert ingest_settings(bank)["dedup_threshold"] == 0.85
    memory_retain(bank=bank, text="I love hiking in the mountains.", actor="test")
    outcome = ingest_turn(bank=bank, actor="test", assistant_message="",
                          user_message="I love hiking in the mountains! I work at Acme as a data engineer. "
                                       "I always want answers in Portuguese.")
    assert outcome.extracted == 3
    assert outcome.below_threshold == 1  # the plain fact is under 0.65
    # Highest importance first and only one per turn: the instruction.
    assert [Memory.objects.get(memory_id=i).text for i in outcome.stored] == [
        "I always want answers in Portuguese."]
    again = ingest_turn(bank=bank, actor="test", user_message="I always want answers in Portuguese.",
                        assistant_message="")
    assert again.stored == [] and again.duplicates == 1


@pytest.mark.django_db
def test_disabled_banks_ingest_nothing(make_bank):
    bank = make_bank("user-alice", config={"auto_ingest": {"enabled": False}})
    assert ingest_turn(bank=bank, actor="t", user_message="I prefer tea.", assistant_message="").disabled


@pytest.mark.django_db(transaction=True)
def test_facts_of_a_turn_join_its_session_and_are_indexed_with_its_context(make_bank):
    bank = make_bank("user-alice")
    first = ingest_turn(bank=bank, actor="t", user_message="I adopted a greyhound called Biscuit.",
                        assistant_message="", session_id="chat-7")
    second = ingest_turn(bank=bank, actor="t", user_message="I prefer walking him at dawn.",
                         assistant_message="", session_id="chat-7")
    assert first.stored and second.stored
    later = Memory.objects.get(memory_id=second.stored[0])
    assert later.session_key == "chat-7" and later.metadata["session_id"] == "chat-7"
    assert "greyhound called Biscuit" in (later.context or "")
    alone = ingest_turn(bank=bank, actor="t", user_message="I work at Acme as a data engineer.",
                        assistant_message="")
    assert Memory.objects.get(memory_id=alone.stored[0]).session_key is None
