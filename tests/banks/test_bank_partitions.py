"""The partitioned install (banks migration 0034, ``MEMORYHUB_BANK_PARTITIONS``; docs/scaling.md "The
partitioned install"): the bank tables hash-partitioned by bank_id keep their columns, keys, indexes and
triggers, PostgreSQL refuses a key without bank_id, and a bank's own vector index goes on its partition.

Each test converts the (empty) test database inside its own transaction, rolled back after it; in the
partitioned run (MEMORYHUB_BANK_PARTITIONS=4, make test) the tables are partitioned already."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.utils import NotSupportedError
from django.test.utils import CaptureQueriesContext

from banks.models import Bank, DuplicatePair, Entity, Memory
from banks.partitions import bank_partition
from banks.selectors.duplicates import duplicate_clusters
from banks.selectors.ego import ego_graph, entity_mentions
from banks.selectors.graph import graph_neighbors
from banks.selectors.recall import recall_memories
from banks.services.memories import memory_retain
from banks.services.vector_indexes import bank_vector_index_adopt, bank_vector_index_build
from banks.vectors import bank_index_name
from portability.services.export_lines import _select
from tests.factories import make_memory

conversion = importlib.import_module("banks.migrations.0034_bank_partitions")


def _partition(settings: Any) -> None:
    settings.MEMORYHUB_BANK_PARTITIONS = settings.MEMORYHUB_BANK_PARTITIONS or 4
    conversion.partition_bank_tables(None, connection.schema_editor())


def _one(sql: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        row = cursor.fetchone()
    return row[0] if row else None


def test_the_bank_tables_are_partitioned_by_bank_and_keep_keys_indexes_and_triggers(db: None, settings: Any) -> None:
    _partition(settings)
    for table in conversion.TABLES:
        assert _one("SELECT relkind FROM pg_class WHERE oid = %s::regclass", [table]) == "p", table
        assert _one("SELECT pg_get_partkeydef(%s::regclass)", [table]) == "HASH (bank_id)"
        assert _one("SELECT count(*) FROM pg_inherits WHERE inhparent = %s::regclass", [table]) \
            == settings.MEMORYHUB_BANK_PARTITIONS
    assert _one("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'banks_memory_pkey'") \
        == "PRIMARY KEY (bank_id, id)"
    assert _one("SELECT count(*) FROM pg_constraint WHERE conrelid = 'banks_memoryentity'::regclass "
                "AND contype = 'f' AND conparentid = 0 AND pg_get_constraintdef(oid) LIKE 'FOREIGN KEY (bank_id, %%'") == 2
    triggers = _one("SELECT array_agg(tgname::text ORDER BY tgname) FROM pg_trigger "
                    "WHERE tgrelid = 'banks_memory'::regclass AND NOT tgisinternal")
    assert {"memory_search_context", "memory_session_key", "memory_vector_index_tier"} <= set(triggers)
    # The shared graph: one HNSW index per partition, each named after the parent's.
    assert _one("SELECT count(*) FROM pg_inherits WHERE inhparent = 'memory_hnsw_384'::regclass") \
        == settings.MEMORYHUB_BANK_PARTITIONS
    assert _one("SELECT to_regclass('memory_hnsw_384_p0') IS NOT NULL")
    # What Citus refuses, PostgreSQL now refuses: a unique key without the distribution column.
    with pytest.raises(NotSupportedError, match="partitioning columns"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("CREATE UNIQUE INDEX memory_id_alone ON banks_memory (id)")


def test_writes_and_recall_work_and_a_banks_own_index_is_built_on_its_partition(
        db: None, settings: Any, make_bank: Callable[..., Bank]) -> None:
    _partition(settings)
    bank = make_bank("partitioned")
    memory = memory_retain(bank=bank, text="the heron waits at the pier at dawn", actor="test",
                           metadata={"session_id": "s-1"}).memory
    assert memory is not None
    partition = bank_partition("banks_memory", bank.pk)
    assert partition.startswith("banks_memory_p")
    assert _one("SELECT tableoid::regclass::text FROM banks_memory WHERE bank_id = %s AND id = %s",
                [bank.pk, memory.pk]) == partition
    hits, *_ = recall_memories(bank, "heron pier", max_results=5, arms=("keyword",))
    assert [h.memory_id for h in hits] == [memory.memory_id]

    bank_vector_index_adopt(bank)
    with connection.cursor() as cursor:  # the retain's deferred key checks, before an index is built
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert bank_vector_index_build(bank)
    assert _one("SELECT indrelid::regclass::text FROM pg_index WHERE indexrelid = to_regclass(%s)",
                [bank_index_name(bank.pk)]) == partition
    assert Memory.objects.filter(bank=bank).count() == 1


def test_a_tenants_storage_counts_the_index_bytes_of_its_partitions(
        db: None, settings: Any, make_bank: Callable[..., Bank]) -> None:
    from banks.selectors.tenant_storage import tenant_storage

    _partition(settings)
    bank = make_bank("stored")
    memory_retain(bank=bank, text="a memory whose indexes take room", actor="test")
    storage = tenant_storage("acme", [bank])
    assert storage.heap_bytes > 0 and storage.index_bytes > 0


def test_an_install_holding_rows_is_refused_and_left_as_it_was(db: None, settings: Any,
                                                               make_bank: Callable[..., Bank]) -> None:
    memory_retain(bank=make_bank("full"), text="a memory already here", actor="test")
    kind = _one("SELECT relkind FROM pg_class WHERE oid = 'banks_memory'::regclass")
    settings.MEMORYHUB_BANK_PARTITIONS = 4
    if kind == "p":  # the partitioned run: there is nothing left to convert, and nothing is touched
        conversion.partition_bank_tables(None, connection.schema_editor())
    else:
        with pytest.raises(conversion.PartitionRefused, match="fresh install only.*banks_memory"):
            conversion.partition_bank_tables(None, connection.schema_editor())
    assert _one("SELECT relkind FROM pg_class WHERE oid = 'banks_memory'::regclass") == kind


def test_with_the_setting_off_nothing_changes(db: None, settings: Any) -> None:
    kind = _one("SELECT relkind FROM pg_class WHERE oid = 'banks_memory'::regclass")
    settings.MEMORYHUB_BANK_PARTITIONS = 0
    conversion.partition_bank_tables(None, connection.schema_editor())
    assert _one("SELECT relkind FROM pg_class WHERE oid = 'banks_memory'::regclass") == kind


@pytest.mark.django_db(transaction=True)
def test_a_later_migrations_concurrent_index_is_built_on_a_partitioned_table() -> None:
    """AddIndexConcurrently / RemoveIndexConcurrently (how every migration adds an index) on a table
    partitioned by bank: PostgreSQL refuses CONCURRENTLY there, the schema editor builds it per partition."""
    from django.db import models
    from django.test.utils import isolate_apps

    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE scratch_partitioned (bank_id bigint NOT NULL, id bigint NOT NULL, note text) "
                       "PARTITION BY HASH (bank_id)")
        for remainder in range(2):
            cursor.execute(f"CREATE TABLE scratch_partitioned_p{remainder} PARTITION OF scratch_partitioned "
                           f"FOR VALUES WITH (MODULUS 2, REMAINDER {remainder})")
    try:
        with isolate_apps("banks"):
            class Scratch(models.Model):
                bank_id = models.BigIntegerField()
                note = models.TextField(blank=True)

                class Meta:
                    app_label = "banks"
                    db_table = "scratch_partitioned"
                    managed = False

                def __str__(self) -> str:
                    return self.note

            index = models.Index(fields=["bank_id", "note"], name="scratch_note_idx",
                                 condition=~models.Q(note=""))
            with connection.schema_editor(atomic=False) as editor:
                editor.add_index(Scratch, index, concurrently=True)
            assert _one("SELECT indisvalid FROM pg_index WHERE indexrelid = 'scratch_note_idx'::regclass")
            assert _one("SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_inherits i "
                        "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'scratch_note_idx'::regclass") \
                == ["scratch_note_idx_p0", "scratch_note_idx_p1"]
            assert "WHERE (NOT (note = ''::text))" in _one("SELECT pg_get_indexdef('scratch_note_idx_p1'::regclass)")
            with connection.schema_editor(atomic=False) as editor:
                editor.remove_index(Scratch, index, concurrently=True)
            assert _one("SELECT to_regclass('scratch_note_idx') IS NULL")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE IF EXISTS scratch_partitioned")


def _partitions_read(sql: str) -> set[str]:
    """The partitions of the memory and mention tables a statement's plan reads (pruned at planning:
    literals)."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
        plan = cursor.fetchone()[0]
    found: set[str] = set()

    def walk(node: dict[str, Any]) -> None:
        name = node.get("Relation Name", "")
        if name.startswith(("banks_memory_p", "banks_memoryentity_p")):
            found.add(name)
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"] if isinstance(plan, list) else json.loads(plan)[0]["Plan"])
    return found


def test_joins_through_mentions_links_and_pairs_read_only_the_banks_own_partitions(
        db: None, settings: Any, make_bank: Callable[..., Bank]) -> None:
    # A join from mentions, links or pairs to their memories names the memory's bank too: a join on the
    # memory's id alone appends every partition of the memory table (keys lead with the bank), which on
    # a bank just imported, before its statistics, read each mention's whole bank again (0.9 s a page
    # of 1,740 mentions), and at export probed every partition for every row.
    _partition(settings)
    bank = make_bank("partitioned")
    first = make_memory(bank, "Noah Smith checked the pumps at the pier.", entities=["Noah Smith", "Pier"])
    second = make_memory(bank, "Noah Smith checked the pumps at the pier again.", entities=["Noah Smith"])
    DuplicatePair.objects.create(bank=bank, memory_a_id=first.pk, memory_b_id=second.pk, similarity=0.97)
    noah = Entity.objects.get(bank=bank, name="Noah Smith")
    with CaptureQueriesContext(connection) as queries:
        ego_graph(bank=bank, focus=noah)
        entity_mentions(bank=bank, entity=noah)
        graph_neighbors(bank=bank, entity_ids=["Noah Smith"])
        clusters = duplicate_clusters(bank=bank, threshold=0.9)
        hits, *_ = recall_memories(bank, "What did Noah Smith check?", max_results=5, arms=("graph",))
    assert clusters.cluster_count == 1 and {h.memory_id for h in hits} == {first.memory_id, second.memory_id}
    own = {bank_partition("banks_memory", bank.pk), bank_partition("banks_memoryentity", bank.pk)}
    joins = [q["sql"] for q in queries.captured_queries
             if "JOIN" in q["sql"] and "banks_memory" in q["sql"] and q["sql"].lstrip()[:4].upper() in {"SELE", "WITH"}]
    joins.append(_select(bank, include_entities=True, include_archived=False))  # the export's lines (COPY)
    assert len(joins) >= 6
    for sql in joins:
        assert _partitions_read(sql) <= own, sql
