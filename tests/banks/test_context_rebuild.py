"""Rebuilding a bank's conversation sessions and contexts: rows stored before contexts existed, and a
bank's new context window, end as a fresh insert would have stored them (contexts and vectors)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from banks.models import Bank, Job, JobState, Memory
from banks.providers import bank_embedder
from banks.providers.embeddings import cosine
from banks.services.context_rebuild import contexts_rebuild_bank
from banks.services.memories import memory_retain
from banks.turn_context import REBUILD_JOB_KIND, embedding_text
from banks.vectors import vector_literal

DAY = datetime(2024, 3, 2, 10, 0, tzinfo=UTC)

# Real commits: vectors are made again once each batch commits.
pytestmark = pytest.mark.django_db(transaction=True)


def turn(bank: Bank, text: str, index: int, session: str = "s1", role: str = "user") -> str:
    outcome = memory_retain(bank=bank, text=text, actor="t", metadata={"session_id": session, "role": role},
                            occurred_at=DAY, created_at=DAY + timedelta(seconds=index), near_dedup=False)
    assert outcome.stored, outcome
    return outcome.memory_id or ""


def conversation(bank: Bank) -> None:
    # Ids and session order differ (a late turn), and sessions interleave across batches.
    turn(bank, "The peppers are flowering at last.", 2)
    turn(bank, "Slugs ate two of the seedlings overnight.", 5)
    turn(bank, "My neighbour Tomasz gave me the seedlings.", 0)
    turn(bank, "The train to Leeds was late again.", 0, session="s2")
    turn(bank, "Check at night with a torch for slime trails.", 6, role="assistant")
    turn(bank, "Lovely! Which variety are they?", 1, role="assistant")
    turn(bank, "Forty minutes, this time.", 1, session="s2")
    memory_retain(bank=bank, text="A note outside any conversation about compost.", actor="t")
    memory_retain(bank=bank, text="[user]: hi\n[assistant]: hello", actor="t",
                  metadata={"chatgpt": {"conversation_id": "c-1"}})


def state(bank: Bank) -> dict[int, tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, session_key, context, context_vector::text, embedding::text FROM banks_memory "
                       "WHERE bank_id = %s ORDER BY id", [bank.pk])
        return {row[0]: tuple(row[1:]) for row in cursor.fetchall()}


def as_before_contexts(bank: Bank) -> None:
    """Age the rows to how they were stored before sessions and contexts: none, a vector of the text alone."""
    rows = list(Memory.objects.filter(bank=bank).values_list("id", "text"))
    vectors = bank_embedder(bank).embed([text for _, text in rows])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE banks_memory m SET session_key = NULL, context = NULL, embedding = v.e::vector "
                       "FROM unnest(%s::bigint[], %s::text[]) AS v(id, e) WHERE m.id = v.id",
                       [[pk for pk, _ in rows], [vector_literal(v) for v in vectors]])


def test_the_rebuild_restores_exactly_what_a_fresh_insert_stores():
    bank = Bank.objects.create(bank_id="old-rows")
    conversation(bank)
    fresh = state(bank)
    assert sum(1 for s in fresh.values() if s[1]) == 8  # every turn has a context
    as_before_contexts(bank)
    aged = state(bank)
    assert all(s[0] is None and s[1] is None and s[2] is None for s in aged.values())
    counts = contexts_rebuild_bank(bank=bank, batch=2)  # small batches: sessions cross them
    # A turn whose predecessor comes in a later batch is written again when that one is reached.
    assert counts["rows"] == 9 and counts["contexts_written"] >= 8
    assert state(bank) == fresh
    assert contexts_rebuild_bank(bank=bank, batch=2) == {"rows": 9, "contexts_written": 0}  # nothing left to do


def test_the_command_runs_the_rebuild_as_a_job_with_its_progress():
    bank = Bank.objects.create(bank_id="old-cli")
    other = Bank.objects.create(bank_id="untouched")
    conversation(bank)
    turn(other, "Kept as it was.", 0)
    turn(other, "Still without a context.", 1)
    fresh = state(bank)
    as_before_contexts(bank)
    as_before_contexts(other)
    call_command("rebuild_contexts", "--bank", "old-cli")
    assert state(bank) == fresh
    assert all(s[1] is None for s in state(other).values())
    job = Job.objects.get(bank=bank, kind=REBUILD_JOB_KIND)
    assert job.state == JobState.SUCCEEDED and job.progress_done == 9 and job.progress_total == 9
    assert job.counts["rows"] == 9 and job.counts["contexts_written"] >= 8
    call_command("rebuild_contexts")  # every bank
    assert all(s[1] for s in state(other).values())


def test_a_new_context_window_starts_the_job_and_the_stored_contexts_follow(api):
    bank = Bank.objects.get(bank_id="user-alice")
    first = turn(bank, "My neighbour Tomasz gave me seedlings of a pepper variety.", 0)
    turn(bank, "Lovely. Do you know the variety name?", 1, role="assistant")
    reply = turn(bank, "He calls them Sokole.", 2)
    assert "Tomasz" not in (Memory.objects.get(memory_id=reply).context or "")
    unchanged = api.patch("/v1/banks/user-alice", {"name": "Alice"})
    assert unchanged.status_code == 200 and unchanged.json()["context_rebuild_job_id"] is None
    response = api.patch("/v1/banks/user-alice", {"config": {"recall": {"context_turns": 2}}})
    assert response.status_code == 200, response.content
    job = Job.objects.get(pk=response.json()["context_rebuild_job_id"])
    assert job.kind == REBUILD_JOB_KIND and job.bank_id == bank.pk and job.state == JobState.SUCCEEDED
    stored = Memory.objects.get(memory_id=reply)
    assert stored.context == ("user, 2024-03-02\nuser: My neighbour Tomasz gave me seedlings of a pepper variety.\n"
                              "assistant: Lovely. Do you know the variety name?")
    embedder = bank_embedder(bank)
    assert cosine(list(stored.embedding or []), embedder.embed([embedding_text(stored.text, stored.context)])[0]) > 0.9999
    # Off: the contexts go, the vectors are the texts' alone.
    response = api.patch("/v1/banks/user-alice", {"config": {"recall": {"context_turns": 0}}})
    assert response.json()["context_rebuild_job_id"] not in (None, job.pk)
    stored = Memory.objects.get(memory_id=reply)
    assert stored.context is None and Memory.objects.get(memory_id=first).context is None
    assert cosine(list(stored.embedding or []), embedder.embed([stored.text])[0]) > 0.9999
