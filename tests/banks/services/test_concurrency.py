"""Check-then-write sequences raced by real threads, each on its own connection to the real database."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django.db.utils import OperationalError
from django.test import Client

from banks.content import content_hash
from banks.models import Bank, Entity, Memory, MemoryEntity
from banks.services.banks import bank_create
from banks.services.entities import attach_entities
from banks.services.memories import memory_retain
from banks.services.merge import memory_merge
from tests.banks.services.conftest import run_in_threads, wait_for_lock_waiter
from tests.conftest import ApiClient
from tests.fakes import SlowProvider

pytestmark = pytest.mark.django_db(transaction=True)
THREADS = 8


def _bank(bank_id: str, embedding_provider: str = "") -> Bank:
    bank = bank_create(bank_id=bank_id, actor="test")
    if embedding_provider:
        bank.embedding_provider = embedding_provider
        bank.save(update_fields=["embedding_provider"])
    return bank


def test_near_identical_concurrent_retains_store_one_memory():
    bank = _bank("race-dedup")
    # Same words, different punctuation: different content hashes, identical embeddings.
    texts = [f"The quarterly deploy freeze starts every Friday afternoon{'!' * i}" for i in range(THREADS)]

    results, errors = run_in_threads(THREADS, lambda i: memory_retain(bank=bank, text=texts[i], actor="test"))

    assert errors == [None] * THREADS
    assert Memory.objects.filter(bank=bank).count() == 1
    stored = [r for r in results if r.stored]
    assert len(stored) == 1
    assert {r.duplicate_of for r in results if not r.stored} == {stored[0].memory_id}


def test_concurrent_retains_count_every_entity_mention():
    bank = _bank("race-mentions")
    topics = ["sailing in Greece", "tax forms due in April", "a new espresso machine", "the Berlin office move",
              "quantum chemistry homework", "a broken bicycle chain", "jazz records from 1959", "rock climbing"]

    _, errors = run_in_threads(THREADS, lambda i: memory_retain(
        bank=bank, text=f"Alice talked about {topics[i]}.", actor="test", entities=[{"name": "Alice"}]))

    assert errors == [None] * THREADS
    alice = Entity.objects.get(bank=bank, entity_id="alice")
    assert MemoryEntity.objects.filter(entity=alice).count() == THREADS
    assert alice.mention_count == THREADS


def test_concurrent_retains_naming_the_same_new_entities_in_opposite_orders_neither_deadlock_nor_miscount():
    bank = _bank("race-entity-order")
    names = ["Alice", "Bruno", "Chen", "Dana"]

    def retain(i: int):
        ordered = names if i % 2 else names[::-1]
        return memory_retain(bank=bank, text=f"Planning meeting number {i} about topic {i * 7919}.", actor="test",
                             near_dedup=False, entities=[{"name": n} for n in ordered])

    _, errors = run_in_threads(THREADS, retain)

    assert errors == [None] * THREADS
    counts = dict(Entity.objects.filter(bank=bank).values_list("entity_id", "mention_count"))
    assert counts == {n.lower(): THREADS for n in names}
    assert MemoryEntity.objects.filter(memory__bank=bank).count() == THREADS * len(names)


def test_a_merge_holds_no_row_lock_while_it_embeds_the_new_text(slow_embeddings: SlowProvider):
    bank = _bank("race-merge-lock", slow_embeddings.spec)
    a, b = (memory_retain(bank=bank, text=t, actor="test", near_dedup=False).memory_id
            for t in ("Standup is at 9:30.", "The standup meeting moved to half past nine."))
    merging = threading.Thread(target=lambda: (
        memory_merge(bank=bank, memory_ids=[a, b], actor="test", text="Standup is at 9:30 every weekday."),
        connection.close()))
    slow_embeddings.requested.clear()
    merging.start()
    assert slow_embeddings.requested.wait(timeout=10)  # the merge is now waiting for its embedding
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '100ms'")
            cursor.execute("SELECT id FROM banks_memory WHERE memory_id IN (%s, %s) FOR UPDATE", [a, b])
            locked_out = False
    except OperationalError:
        locked_out = True
    merging.join(timeout=30)
    assert not locked_out, "the merge held row locks during a remote embedding call"
    assert Memory.objects.get(memory_id=a).text == "Standup is at 9:30 every weekday."


def test_overlapping_merges_cannot_both_succeed(slow_embeddings: SlowProvider):
    bank = _bank("race-merge", slow_embeddings.spec)
    a, b, c = (memory_retain(bank=bank, text=t, actor="test", near_dedup=False).memory_id
               for t in ("Invoices go out on the 1st.", "Billing runs monthly.", "Invoices are emailed as PDF."))
    outcomes: dict[str, object] = {}

    def merge(name: str, ids: list[str], text: str | None) -> None:
        try:
            outcomes[name] = memory_merge(bank=bank, memory_ids=ids, actor="test", text=text).memory_id
        except Exception as exc:  # noqa: BLE001  (recorded for the assertions)
            outcomes[name] = exc
        finally:
            connection.close()

    first = threading.Thread(target=merge, args=("ab", [a, b], "Invoices go out monthly on the 1st."))
    second = threading.Thread(target=merge, args=("cb", [c, b], None))
    slow_embeddings.requested.clear()
    first.start()
    assert slow_embeddings.requested.wait(timeout=10)  # the first merge is waiting for its embedding
    second.start()
    first.join(timeout=30)
    second.join(timeout=30)

    winners = [k for k, v in outcomes.items() if isinstance(v, str)]
    assert len(winners) == 1, outcomes
    assert Memory.objects.get(memory_id=b).merged_into.memory_id == outcomes[winners[0]]


def _edit_through(surface: str, bank: Bank, memory_id: str, text: str, secret: str, operator_client: Client) -> int:
    """Edit a memory's text through one surface; the status it answers (a page's error is its message)."""
    if surface == "rest":
        return ApiClient(secret).post("/v1/agent/memory_update", {"bank_id": bank.bank_id, "traceId": memory_id,
                                                                 "content": text}).status_code
    if surface == "mcp":
        from agents.mcp_server import ToolFailed, _call_sync

        try:
            _call_sync(secret, "memory_update", {"bank_id": bank.bank_id, "traceId": memory_id, "content": text})
        except ToolFailed as exc:
            return int(exc.error["status"])
        return 200
    page = operator_client.post(f"/banks/{bank.bank_id}/memories/{memory_id}/edit",
                                {"text": text, "tags": "", "fact_type": "world", "metadata": "{}"})
    assert "already holds the same content" in page.content.decode()  # the operator is told why
    return page.status_code


@pytest.mark.parametrize("surface", ["rest", "mcp", "page"])
def test_an_edit_that_loses_to_a_concurrent_import_is_a_409(surface: str, slow_embeddings: SlowProvider,
                                                            make_token, django_user_model):
    bank = _bank("race-update", slow_embeddings.spec)
    memory = memory_retain(bank=bank, text="Backups run nightly.", actor="test").memory
    assert memory is not None
    secret = make_token({"race-update": ["read", "write"]})
    operator_client = Client()
    operator_client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    new_text = "Backups run nightly at 02:00 UTC."
    answers: list[int] = []

    def edit() -> None:
        try:
            answers.append(_edit_through(surface, bank, memory.memory_id, new_text, secret, operator_client))
        finally:
            connection.close()

    slow_embeddings.requested.clear()
    editing = threading.Thread(target=edit)
    editing.start()
    assert slow_embeddings.requested.wait(timeout=10)
    # An import (which takes no lock) stores the same text while the edit waits for its embedding.
    Memory.objects.create(bank=bank, memory_id="imported-1", text=new_text, content_hash=content_hash(new_text),
                          retained_at=memory.retained_at, created_at=memory.created_at)
    editing.join(timeout=30)
    assert answers == [409]
    assert Memory.objects.get(pk=memory.pk).text == "Backups run nightly."


def test_concurrent_recalls_are_all_counted(make_token):
    from banks.models import BankUsage

    bank = _bank("race-usage")
    jazz = memory_retain(bank=bank, text="Alice likes jazz records from 1959.", actor="test").memory
    token = make_token({"race-usage": ["read"]})

    def recall(i: int) -> int:
        client = ApiClient(token)
        for _ in range(3):
            assert client.post("/v1/recall", {"query": "jazz records", "bank_id": "race-usage"}).status_code == 200
        return 3

    results, errors = run_in_threads(THREADS, recall)
    assert errors == [None] * THREADS
    usage = BankUsage.objects.get(bank=bank)
    # The upsert adds up under concurrency: no recall is lost, however they interleave.
    assert usage.recall_count == sum(results) == 3 * THREADS and usage.recall_hit_count == 3 * THREADS
    assert Memory.objects.get(pk=jazz.pk).last_recalled_at is not None


def test_an_entity_another_writer_commits_while_a_retain_waits_for_it_is_linked_and_counted():
    # A retain's entity insert waits for the entity another writer is inserting; once that writer commits,
    # the retain links and counts it as one of its own.
    bank = _bank("race-entity-wait")
    first, second = (Memory.objects.get(bank=bank, memory_id=memory_retain(
        bank=bank, text=t, actor="test", extract_entities=False).memory_id)
        for t in ("Alice opened the office.", "Alice and Bruno closed the office."))
    created = threading.Event()

    def attach(i: int) -> list[int]:
        if i == 0:
            with transaction.atomic():
                attach_entities(first, [{"name": "Alice"}])
                created.set()
                # Commit once the other writer waits for Alice's row.
                wait_for_lock_waiter("%INSERT INTO banks_entity%", tries=3000, pause=0.01)
            return []
        created.wait(timeout=30)
        with transaction.atomic():
            return attach_entities(second, [{"name": "Alice"}, {"name": "Bruno"}])[1]

    results, errors = run_in_threads(2, attach)

    assert errors == [None, None]
    alice, bruno = (Entity.objects.get(bank=bank, entity_id=e) for e in ("alice", "bruno"))
    assert sorted(results[1]) == sorted([alice.pk, bruno.pk])
    assert set(MemoryEntity.objects.filter(memory=second).values_list("entity_id", flat=True)) == {alice.pk, bruno.pk}
    assert (alice.mention_count, bruno.mention_count) == (2, 1)
