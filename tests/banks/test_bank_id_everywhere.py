"""Every bank table carries bank_id, and every unique constraint between bank tables includes it:
the migration backfills it, the services set it, and a trigger fills it for an insert that leaves it out."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from banks.models import Bank, MemoryEntity, MentalModelRevision, ObservationEvidence
from banks.services.memories import memory_retain
from banks.services.mental_models import mental_model_create
from banks.services.observations import observation_create

# Not on a partitioned install (MEMORYHUB_BANK_PARTITIONS): its schema cannot go back before 0033 (a key on
# id alone is refused there), and the fill trigger cannot move a row it gives a bank to another partition.
flat_only = pytest.mark.skipif(bool(settings.MEMORYHUB_BANK_PARTITIONS), reason="not on a partitioned install")

BANK_TABLES_WITHOUT_BANK_ID_ALLOWED = {"banks_bank"}
UNIQUES = {"memory_entity_unique", "observation_evidence_unique", "revision_number_unique", "memory_link_unique",
           "entity_link_unique"}


@flat_only
@pytest.mark.django_db
def test_the_services_set_bank_id_and_the_trigger_fills_what_an_insert_leaves_out(make_bank):
    bank = make_bank("user-alice")
    memory = memory_retain(bank=bank, text="Alice Smith met Bob Jones in Lisbon.", actor="test").memory
    observation_create(bank=bank, text="Alice travels.", actor="test", source_ids=[memory.memory_id])
    mental_model_create(bank=bank, model_id="prefs", title="Preferences", content="Jazz.", actor="test")
    assert MemoryEntity.objects.filter(bank=bank).count() == MemoryEntity.objects.count() >= 2
    assert ObservationEvidence.objects.get().bank_id == bank.pk
    assert MentalModelRevision.objects.get().bank_id == bank.pk
    # A writer that knows nothing of the column (raw SQL, an older bulk path): the trigger fills it.
    entity = MemoryEntity.objects.first().entity_id
    other = memory_retain(bank=bank, text="Carol bakes bread on Sundays.", actor="test").memory
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO banks_memoryentity (memory_id, entity_id) VALUES (%s, %s) RETURNING bank_id",
                       [other.pk, entity])
        assert cursor.fetchone()[0] == bank.pk


@pytest.mark.django_db
def test_unique_constraints_between_bank_tables_lead_with_bank_id():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.conname, array_agg(a.attname ORDER BY k.n) FROM pg_constraint c "
            "CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum "
            "WHERE c.conname = ANY(%s) GROUP BY c.conname", [list(UNIQUES)])
        found = dict(cursor.fetchall())
        assert set(found) == UNIQUES
        assert all(columns[0] == "bank_id" for columns in found.values()), found
        cursor.execute(
            "SELECT t.table_name FROM information_schema.tables t WHERE t.table_schema = 'public' "
            "AND t.table_name LIKE 'banks\\_%%' AND t.table_type = 'BASE TABLE' AND NOT EXISTS ("
            "SELECT 1 FROM information_schema.columns c WHERE c.table_name = t.table_name AND c.column_name = 'bank_id')")
        without = {r[0] for r in cursor.fetchall()} - BANK_TABLES_WITHOUT_BANK_ID_ALLOWED
    # Tables that do not belong to one bank: tokens (grants by pattern), webhook deliveries (by source).
    assert without <= {"banks_apitoken", "banks_webhookdelivery"}, without


@flat_only
@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_bank_id_for_existing_rows():
    executor = MigrationExecutor(connection)
    scale = executor.loader.get_migration("banks", "0015_scale_operations")
    before = [dep for dep in scale.dependencies if dep[0] == "banks"]  # the state just before it
    latest = executor.loader.graph.leaf_nodes("banks")
    executor.migrate(before)
    try:
        old = MigrationExecutor(connection).loader.project_state(before).apps
        bank = old.get_model("banks", "Bank").objects.create(bank_id="old-bank")
        now = timezone.now()
        memory = old.get_model("banks", "Memory").objects.create(
            bank=bank, memory_id="m1", text="Alice", retained_at=now, created_at=now, content_hash="x")
        entity = old.get_model("banks", "Entity").objects.create(bank=bank, entity_id="alice", name="Alice")
        old.get_model("banks", "MemoryEntity").objects.create(memory=memory, entity=entity)
        observation = old.get_model("banks", "Observation").objects.create(
            bank=bank, observation_id="o1", text="Alice", created_at=now, updated_at=now)
        old.get_model("banks", "ObservationEvidence").objects.create(
            observation=observation, memory=memory, memory_ref="m1", evidence_at=now)
        model = old.get_model("banks", "MentalModel").objects.create(bank=bank, model_id="mm", title="T",
                                                                     refreshed_at=now)
        old.get_model("banks", "MentalModelRevision").objects.create(model=model, number=1, title="T")
    finally:
        MigrationExecutor(connection).migrate(latest)
    fresh = Bank.objects.get(bank_id="old-bank")
    assert MemoryEntity.objects.get().bank_id == fresh.pk
    assert ObservationEvidence.objects.get().bank_id == fresh.pk
    assert MentalModelRevision.objects.get().bank_id == fresh.pk
