"""Keys that lead with the bank (migration 0033): every bank table's primary key and unique constraints start
with bank_id, its foreign keys to other bank tables are (bank_id, x_id), and PostgreSQL itself refuses a row
that points into another bank, as a Citus cluster distributed by bank_id would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import IntegrityError, NotSupportedError, connection, transaction
from django.utils import timezone

from banks.models import (
    Bank,
    DuplicatePair,
    Entity,
    EntityLink,
    Memory,
    MemoryEntity,
    MemoryLink,
    MentalModel,
    MentalModelRevision,
    Observation,
    ObservationEvidence,
)
from banks.services.memories import memory_retain

# Not distributed by bank (docs/scaling.md, "What would still not be distributed"): reference tables
# copied to every node, and the records that outlive their bank, kept on the coordinator.
REFERENCE_OR_COORDINATOR = {"banks_bank", "banks_bankmembership", "banks_webhooksource", "banks_auditevent",
                            "banks_job"}


def _bank_tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
            "USING (table_schema, table_name) WHERE c.table_schema = 'public' AND c.column_name = 'bank_id' "
            "AND t.table_type = 'BASE TABLE' ORDER BY 1")
        return [r[0] for r in cursor.fetchall() if r[0] not in REFERENCE_OR_COORDINATOR]


def _columns(sql: str, params: list[Any]) -> list[tuple[str, list[str]]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@pytest.mark.django_db
def test_every_bank_table_keys_lead_with_bank_id():
    tables = _bank_tables()
    assert {"banks_memory", "banks_memoryentity", "banks_observationevidence", "banks_mentalmodelrevision",
            "banks_duplicatepair", "portability_pendinglink", "banks_bankusage"} <= set(tables)
    for table in tables:
        # Every unique index (the primary key's among them) starts with bank_id.
        uniques = _columns(
            "SELECT i.indexrelid::regclass::text, array_agg(a.attname ORDER BY k.n) FROM pg_index i "
            "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "WHERE i.indrelid = %s::regclass AND i.indisunique GROUP BY 1", [table])
        assert uniques, table
        assert all(columns[0] == "bank_id" for _, columns in uniques), (table, uniques)
        primary = _columns(
            "SELECT c.conname, array_agg(a.attname ORDER BY k.n) FROM pg_constraint c "
            "CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum "
            "WHERE c.conrelid = %s::regclass AND c.contype = 'p' GROUP BY 1", [table])
        assert primary and primary[0][1] in (["bank_id", "id"], ["bank_id"]), (table, primary)
        # Every foreign key to another bank table is (bank_id, x_id) -> (bank_id, id), validated.
        foreign = _columns(
            "SELECT c.confrelid::regclass::text || ':' || c.convalidated, "
            "array_agg(a.attname ORDER BY k.n) FROM pg_constraint c "
            "CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum "
            "WHERE c.conrelid = %s::regclass AND c.contype = 'f' "
            "AND c.confrelid::regclass::text <> ALL(%s) GROUP BY c.oid, 1", [table, list(REFERENCE_OR_COORDINATOR)])
        for target, columns in foreign:
            assert target.endswith(":true") and columns[0] == "bank_id" and len(columns) == 2, (table, target, columns)


@pytest.fixture
def two_banks(make_bank: Callable[[str], Bank]) -> tuple[Bank, Bank, Memory, Memory]:
    """Bank A and bank B, each with one memory."""
    a, b = make_bank("keys-a"), make_bank("keys-b")
    # No name in the texts: the tests make the entities themselves.
    ma = memory_retain(bank=a, text="moved to Lisbon in May.", actor="test").memory
    mb = memory_retain(bank=b, text="plays the cello on Fridays.", actor="test").memory
    return a, b, ma, mb


def _refused(create: Callable[[], object]) -> None:
    """``create`` is refused by PostgreSQL (the constraints checked at once, not at the commit)."""
    with pytest.raises(IntegrityError, match="violates foreign key constraint"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        create()


@pytest.mark.django_db
def test_a_mention_of_another_banks_memory_is_refused(two_banks):
    a, b, ma, mb = two_banks
    entity = Entity.objects.create(bank=a, entity_id="alice", name="Alice")
    _refused(lambda: MemoryEntity.objects.create(bank=a, memory=mb, entity=entity))
    # The trigger fills a missing bank_id from the memory: then the entity is the other bank's. (On a
    # partitioned install the trigger may not move the row to that bank's partition: refused too.)
    with pytest.raises((IntegrityError, NotSupportedError)), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("INSERT INTO banks_memoryentity (memory_id, entity_id) VALUES (%s, %s)", [mb.pk, entity.pk])
    # The same rows within one bank are fine.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        MemoryEntity.objects.get_or_create(bank=a, memory=ma, entity=entity)


@pytest.mark.django_db
def test_every_other_cross_bank_reference_is_refused(two_banks):
    a, b, ma, mb = two_banks
    now = timezone.now()
    ea = Entity.objects.create(bank=a, entity_id="alice", name="Alice")
    eb = Entity.objects.create(bank=b, entity_id="bob", name="Bob")
    observation = Observation.objects.create(bank=a, observation_id="o1", text="Alice travels.", created_at=now,
                                             updated_at=now)
    model = MentalModel.objects.create(bank=a, model_id="mm", title="T", refreshed_at=now)
    low, high = sorted([ma.pk, mb.pk])
    _refused(lambda: EntityLink.objects.create(bank=a, entity_a=ea, entity_b=eb, link_type="knows"))
    _refused(lambda: MemoryLink.objects.create(bank=a, source=ma, target=mb, link_type="related"))
    _refused(lambda: ObservationEvidence.objects.create(bank=a, observation=observation, memory=mb,
                                                        memory_ref=mb.memory_id, evidence_at=now))
    _refused(lambda: MentalModelRevision.objects.create(bank=b, model=model, number=1, title="T"))
    _refused(lambda: DuplicatePair.objects.create(bank=a, memory_a_id=low, memory_b_id=high, similarity=0.99))
    _refused(lambda: Memory.objects.filter(pk=ma.pk).update(merged_into=mb))
    # Evidence whose memory was forgotten (memory NULL) is still allowed: the key is not checked then.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        ObservationEvidence.objects.create(bank=a, observation=observation, memory=None,
                                           memory_ref="gone", evidence_at=now)


@pytest.mark.django_db
def test_counts_grouped_by_a_bank_row_still_work(two_banks):
    """Django groups an aggregate by a model's pk alone when PostgreSQL can infer the other columns from it:
    only from the table's real primary key, (bank_id, id) now, so memoryhub.postgres turns that off here."""
    from django.db.models import Count

    a, _, ma, _ = two_banks
    entity = Entity.objects.create(bank=a, entity_id="alice", name="Alice")
    MemoryEntity.objects.get_or_create(bank=a, memory=ma, entity=entity)
    counted = Entity.objects.filter(bank=a, entity_id="alice").annotate(n=Count("memoryentity")).get()
    assert (counted.name, counted.n) == ("Alice", 1)
