"""A conversation turn that follows stored turns of its session is embedded once, with its context
computed before its row is inserted; only neighbours whose context a late turn changes are embedded again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from banks.models import Bank, Memory
from banks.providers import bank_embedder
from banks.providers.embeddings import cosine
from banks.services.memories import memory_retain
from banks.turn_context import embedding_text
from tests.factories import count_embed_calls

DAY = datetime(2024, 3, 2, 10, 0, tzinfo=UTC)

# Real commits: a second embedding would come after the commit.
pytestmark = pytest.mark.django_db(transaction=True)


def turn(bank: Bank, text: str, index: int, role: str = "user", **extra: Any) -> Memory:
    outcome = memory_retain(bank=bank, text=text, actor="t", metadata={"session_id": "s1", "role": role, **extra},
                            occurred_at=DAY, created_at=DAY + timedelta(seconds=index), near_dedup=False)
    assert outcome.stored, outcome
    return Memory.objects.get(memory_id=outcome.memory_id)


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every batch of texts any bank's embedder is asked for."""
    return count_embed_calls(monkeypatch, type(bank_embedder(Bank.objects.get_or_create(bank_id="probe")[0])))


def test_a_turn_after_stored_turns_is_embedded_once_with_its_context(embedded):
    bank = Bank.objects.create(bank_id="once", config={"recall": {"context_turns": 2}})
    turn(bank, "My neighbour Tomasz gave me seedlings of a pepper variety.", 0)
    turn(bank, "Lovely. Do you know the variety name?", 1, role="assistant")
    embedded.clear()
    reply = turn(bank, "He calls them Sokole.", 2)
    assert reply.context == ("user, 2024-03-02\nuser: My neighbour Tomasz gave me seedlings of a pepper variety.\n"
                             "assistant: Lovely. Do you know the variety name?")
    assert embedded == [[embedding_text(reply.text, reply.context)]]  # one embedding, one text
    vector = bank_embedder(bank).embed([embedding_text(reply.text, reply.context)])[0]
    assert cosine(list(reply.embedding or []), vector) > 0.9999


def test_a_late_turn_is_embedded_once_and_only_the_follower_it_changes_again(embedded):
    bank = Bank.objects.create(bank_id="late-once")
    turn(bank, "The peppers are flowering.", 1)
    later = turn(bank, "Slugs, dozens of them.", 4)
    embedded.clear()
    middle = turn(bank, "Check at night with a torch for slime trails.", 3, role="assistant")
    later.refresh_from_db()
    assert middle.context == "assistant, 2024-03-02\nuser: The peppers are flowering."
    assert later.context == "user, 2024-03-02\nassistant: Check at night with a torch for slime trails."
    assert embedded == [[embedding_text(middle.text, middle.context)], [embedding_text(later.text, later.context)]]


def test_a_memory_outside_conversations_and_a_first_turn_are_embedded_once(embedded):
    bank = Bank.objects.create(bank_id="plain-once")
    note = memory_retain(bank=bank, text="A note about compost.", actor="t").memory
    first = turn(bank, "Hello there.", 0)
    assert note is not None and note.context is None and first.context == "user, 2024-03-02"
    assert embedded == [["A note about compost."], [embedding_text("Hello there.", "user, 2024-03-02")]]
