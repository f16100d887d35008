"""Writes whose cost must not grow per row, and bounded erasure."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from banks.models import AuditEvent, Entity, Memory, MemoryEntity
from banks.selectors.audit import audit_events_about
from banks.services import forget
from banks.services.entities import attach_entities
from banks.services.memories import memory_retain
from banks.services.memory_archiving import memories_archive, memories_restore
from memoryhub.errors import Conflict, database_error_as_domain_error

pytestmark = pytest.mark.django_db


def test_attaching_many_entities_costs_a_fixed_number_of_queries(bank, django_assert_max_num_queries):
    memory = memory_retain(bank=bank, text="Weekly sync notes.", actor="test", extract_entities=False).memory
    Entity.objects.create(bank=bank, entity_id="alice", name="Alice", mention_count=3)
    names = ["Alice", "Bob", "Carol", "Dan", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "alice"]
    # Its statements are prepared on a connection's first use (memoryhub.postgres.prepared): once, not per row.
    other = memory_retain(bank=bank, text="Other notes.", actor="test", extract_entities=False).memory
    attach_entities(other, [{"name": "Zed"}])

    with django_assert_max_num_queries(3):
        attached, linked = attach_entities(memory, [{"name": n} for n in names])

    assert len(attached) == 10 and sorted(linked) == sorted(attached)
    assert MemoryEntity.objects.filter(memory=memory).count() == 10
    assert Entity.objects.get(bank=bank, entity_id="alice").mention_count == 4
    # Attaching again links nothing new and counts nothing twice.
    attach_entities(memory, [{"name": "Alice"}])
    assert Entity.objects.get(bank=bank, entity_id="alice").mention_count == 4


def test_restoring_many_memories_costs_a_fixed_number_of_queries(bank, django_assert_max_num_queries):
    ids = [memory_retain(bank=bank, text=f"Fact number {n}: {'x' * n}", actor="test", near_dedup=False,
                         extract_entities=False).memory_id for n in range(1, 31)]
    memories_archive(bank=bank, memory_ids=ids, actor="test")
    # Two archived copies of one text: the older comes back, the other stays archived.
    twin = Memory.objects.get(memory_id=ids[0])
    Memory.objects.create(bank=bank, memory_id="twin", text=twin.text, content_hash=twin.content_hash,
                          retained_at=twin.retained_at, created_at=twin.created_at, archived_at=timezone.now())

    with django_assert_max_num_queries(8):
        restored, clashing = memories_restore(bank=bank, memory_ids=[*ids, "twin"], actor="test")

    assert sorted(restored) == sorted(ids) and clashing == ["twin"]
    assert Memory.objects.live().filter(bank=bank).count() == 30
    assert AuditEvent.objects.filter(action="memory.restore").count() == 1


def test_a_compliance_erase_runs_in_bounded_chunks(bank, monkeypatch):
    monkeypatch.setattr(forget, "ERASE_CHUNK", 4, raising=False)
    for n in range(10):
        memory_retain(bank=bank, text=f"Private detail {n} {'y' * n}", actor="test", near_dedup=False,
                      extract_entities=False)

    outcome = forget.memory_forget(bank=bank, actor="test", scope="all", compliance=True, reason="erasure #7")

    assert outcome.deleted_count == 10 and not Memory.objects.filter(bank=bank).exists()
    events = list(AuditEvent.objects.filter(action="memory.erase").order_by("id"))
    assert [len(e.target_ids) for e in events] == [4, 4, 2]
    assert all(e.compliance and e.reason == "erasure #7" for e in events)


def test_a_lost_unique_constraint_is_recognised_by_name(bank):
    memory = memory_retain(bank=bank, text="Only once.", actor="test").memory
    with pytest.raises(IntegrityError) as caught, transaction.atomic():
        Memory.objects.create(bank=bank, memory_id=memory.memory_id, text="other", content_hash="h",
                              retained_at=memory.retained_at, created_at=memory.created_at)
    answer = database_error_as_domain_error(caught.value)
    assert isinstance(answer, Conflict) and answer.status == 409
    assert answer.extra == {"constraint": "memory_id_unique_per_bank"}


def test_a_memorys_audit_history_is_read_through_the_target_index(bank):
    AuditEvent.objects.bulk_create([AuditEvent(bank=bank, bank_ref=bank.bank_id, actor="test", action="memory.retain",
                                               target_ids=[f"m{n}"]) for n in range(5000)])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_auditevent")
    lookup = audit_events_about(bank=bank, target_id="m42")
    assert [e.target_ids for e in lookup] == [["m42"]]
    assert "audit_target_ids_gin" in lookup.explain()
