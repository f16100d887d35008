"""Conversation turns are indexed with their context (speaker, session date, the turn before) in the
keyword and the semantic arm, while their text stays the client's; late turns fill their neighbours'."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from banks.models import Bank, Memory
from banks.providers import bank_embedder
from banks.providers.embeddings import cosine
from banks.recall_fusion import RecallConfig
from banks.selectors.recall import recall_memories
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain
from banks.services.memory_edit import memory_update
from banks.services.memory_rows.contexts import SESSION_METADATA_KEYS
from banks.turn_context import (
    Turn,
    compose_context,
    context_turns,
    embedding_text,
    session_contexts,
    speaker_of,
)

DAY = datetime(2024, 3, 2, 10, 0, tzinfo=UTC)


def test_a_context_is_the_speaker_the_date_and_the_tail_of_the_turns_before():
    turns = [Turn(1, "My neighbour Tomasz gave me seedlings of a pepper variety.", "user", DAY),
             Turn(2, "What a lovely gift. Do you know the variety name?", "assistant", DAY),
             Turn(3, "He calls them Sokole.", "user", DAY)]
    assert compose_context(turns[2], turns[1:2]) == \
        "user, 2024-03-02\nassistant: What a lovely gift. Do you know the variety name?"
    contexts = session_contexts(turns, 2)
    assert contexts[1] == "user, 2024-03-02"
    assert "Tomasz" in (contexts[3] or "") and "variety name" in (contexts[3] or "")
    assert session_contexts(turns, 0) == {1: None, 2: None, 3: None}
    assert session_contexts(turns, 1, start=2).keys() == {3}
    long = Turn(4, "word " * 200 + "the very end", "assistant", DAY)
    assert compose_context(turns[2], [long]).endswith("the very end") and len(compose_context(turns[2], [long])) < 340
    assert embedding_text("Yes!", None) == "Yes!" and embedding_text("Yes!", "user") == "Yes!\nuser"


def test_speaker_and_window_settings():
    assert speaker_of({"role": "assistant"}) == "assistant"
    assert speaker_of({"speaker": "Caroline", "role": "user"}) == "Caroline"
    assert speaker_of({}, "[user]: hi\n[assistant]: hello") == "user"
    assert speaker_of(None, "plain") is None
    assert context_turns(None) == 1 and context_turns({"recall": {"context_turns": 3}}) == 3
    assert context_turns({"recall": {"context_turns": 0}}) == 0
    assert context_turns({"recall": {"context_turns": 99}}) == 1 and context_turns({"recall": {"context_turns": True}}) == 1


# Real commits: the vectors of refreshed turns are made once the write commits.
pytestmark_db = pytest.mark.django_db(transaction=True)


def turn(bank: Bank, text: str, index: int, session: str = "s1", role: str = "user") -> str:
    outcome = memory_retain(bank=bank, text=text, actor="t", metadata={"session_id": session, "role": role},
                            occurred_at=DAY, created_at=DAY + timedelta(seconds=index), near_dedup=False)
    assert outcome.stored, outcome
    return outcome.memory_id or ""


def row(memory_id: str) -> Memory:
    return Memory.objects.get(memory_id=memory_id)


@pytestmark_db
def test_a_short_reply_is_found_by_the_turn_before_it_and_keeps_its_own_text():
    bank = Bank.objects.create(bank_id="talk")
    turn(bank, "My neighbour Tomasz gave me seedlings of a pepper variety from his village.", 0)
    turn(bank, "Lovely. Do you know the variety name?", 1, role="assistant")
    reply = turn(bank, "He calls them Sokole.", 2)
    turn(bank, "Unrelated: the train to Leeds was late again.", 0, session="s2")
    stored = row(reply)
    assert stored.text == "He calls them Sokole." and stored.session_key == "s1"
    assert stored.context == "user, 2024-03-02\nassistant: Lovely. Do you know the variety name?"
    # Its vector is the one of its text with its context.
    embedder = bank_embedder(bank)
    assert cosine(list(stored.embedding), embedder.embed([embedding_text(stored.text, stored.context)])[0]) > 0.9999
    assert cosine(list(stored.embedding), embedder.embed([stored.text])[0]) < 0.9
    for arm in ("keyword", "semantic"):
        hits, _, trace, _ = recall_memories(bank, "what variety name?", arms=(arm,))
        assert hits[0].memory_id == reply or reply in [h.memory_id for h in hits[:2]], arm
        hit = next(h for h in hits if h.memory_id == reply)
        assert hit.text == "He calls them Sokole."  # the context is never the text
        ranks = next(r for r in trace.hit_ranks if r["memory_id"] == reply)
        assert "variety name" in ranks["context"]


@pytestmark_db
def test_a_turn_retained_after_its_neighbours_fills_their_context():
    bank = Bank.objects.create(bank_id="late")
    later = turn(bank, "Slugs, dozens of them.", 4)
    first = turn(bank, "The peppers are flowering.", 1)
    assert row(later).context == "user, 2024-03-02\nuser: The peppers are flowering."
    assert row(first).context == "user, 2024-03-02"
    middle = turn(bank, "Check at night with a torch for slime trails.", 3, role="assistant")
    assert row(later).context == "user, 2024-03-02\nassistant: Check at night with a torch for slime trails."
    assert row(middle).context == "assistant, 2024-03-02\nuser: The peppers are flowering."
    embedder = bank_embedder(bank)
    refreshed = row(later)
    assert cosine(list(refreshed.embedding),
                  embedder.embed([embedding_text(refreshed.text, refreshed.context)])[0]) > 0.9999
    hits, *_ = recall_memories(bank, "torch slime", arms=("keyword",),
                               config=RecallConfig.from_settings({"multi_hop": False}))
    assert {h.memory_id for h in hits} == {middle, later}  # the late turn, by its new context


@pytestmark_db
def test_edits_and_forgetting_refresh_the_next_turn():
    bank = Bank.objects.create(bank_id="edits", config={"recall": {"context_turns": 1}})
    a = turn(bank, "We adopted a greyhound called Biscuit.", 0)
    b = turn(bank, "He is nervous on stairs.", 1)
    memory_update(memory=row(a), actor="t", text="We adopted a whippet called Biscuit.")
    assert "whippet" in (row(b).context or "")
    hits, *_ = recall_memories(bank, "whippet stairs", arms=("semantic",),
                               config=RecallConfig.from_settings({"multi_hop": False}))
    assert {h.memory_id for h in hits[:2]} == {a, b}
    memory_forget(bank=bank, actor="t", memory_ids=[a], erase=True)
    assert "whippet" not in (row(b).context or "") and row(b).context == "user, 2024-03-02"
    assert row(a).context is None and row(a).text == ""


@pytestmark_db
def test_a_bank_can_turn_the_context_off_and_other_memories_have_none():
    bank = Bank.objects.create(bank_id="plain", config={"recall": {"context_turns": 0}})
    turn(bank, "First.", 0)
    second = turn(bank, "Second.", 1)
    assert row(second).context is None and row(second).session_key == "s1"
    note = memory_retain(bank=bank, text="A note outside any conversation", actor="t").memory_id
    assert row(note or "").session_key is None and row(note or "").context is None
    other = Bank.objects.create(bank_id="chat-import")
    imported = memory_retain(bank=other, text="[user]: hi\n[assistant]: hello", actor="t",
                             metadata={"chatgpt": {"conversation_id": "c-1"}}).memory_id
    assert row(imported or "").session_key == "chatgpt:c-1"
    assert (row(imported or "").context or "").startswith("user, ")


@pytestmark_db
def test_the_api_returns_the_clients_text_and_shows_the_context_only_in_the_trace(api):
    for role, text in [("user", "Took the greyhound to the vet today."),
                                       ("assistant", "What did the vet say?"),
                       ("user", "Two more kilos, she said.")]:
        response = api.post("/v1/retain", {"content": text, "bank_id": "user-alice", "occurred_at": "2024-01-15T19:20:00Z",
                                           "metadata": {"session_id": "walks", "role": role}})
        assert response.status_code == 200, response.content
    # One time for the three (the session's date): retained in order, they are ordered by arrival.
    reply = Memory.objects.get(text="Two more kilos, she said.")
    body = api.post("/v1/recall", {"query": "what did the vet say about the greyhound", "bank_id": "user-alice",
                                   "max_results": 5}).json()
    texts = {h["memory_id"]: h["text"] for h in body["hits"]}
    assert texts[reply.memory_id] == "Two more kilos, she said."
    assert all("context" not in h for h in body["hits"])
    ranks = {r["memory_id"]: r for r in body["trace"]["hit_ranks"]}
    assert "What did the vet say?" in ranks[reply.memory_id]["context"]
    stored = Memory.objects.get(pk=reply.pk)
    assert stored.text == "Two more kilos, she said." and "What did the vet say?" in (stored.context or "")


@pytestmark_db
def test_a_bad_context_window_is_refused_with_its_field(api):
    response = api.patch("/v1/banks/user-alice", {"config": {"recall": {"context_turns": 9}}})
    assert response.status_code == 400
    assert "config.recall.context_turns" in response.content.decode() and "0 to 5" in response.content.decode()
    assert api.patch("/v1/banks/user-alice", {"config": {"recall": {"multi_hop": "no"}}}).status_code == 400
    assert api.patch("/v1/banks/user-alice", {"config": {"recall": {"context_turns": 2}}}).status_code == 200


@pytest.mark.django_db
def test_the_metadata_keys_that_skip_the_session_look_are_the_session_rules_own():
    # A retain whose metadata names none of SESSION_METADATA_KEYS asks the database nothing about its
    # session: the keys must be exactly the top-level ones the SQL rule reads.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_functiondef('memoryhub_session_key_of(jsonb)'::regprocedure)")
        definition = cursor.fetchone()[0]
    assert set(re.findall(r"metadata\s*->>?\s*'([^']+)'", definition)) == SESSION_METADATA_KEYS
    with connection.cursor() as cursor:
        for key in SESSION_METADATA_KEYS:
            value = {"conversation_id": "c1"} if key != "session_id" else "s1"
            cursor.execute("SELECT memoryhub_session_key_of(%s::jsonb)", [json.dumps({key: value, "other": 1})])
            assert cursor.fetchone()[0] is not None
