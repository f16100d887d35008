"""The partitioned install: with ``MEMORYHUB_BANK_PARTITIONS=N`` (off by default) a fresh install recreates
every bank table ``PARTITION BY HASH (bank_id)`` with N partitions (docs/scaling.md, "The partitioned
install"). PostgreSQL then refuses any primary key or unique index that does not include ``bank_id``, the
rule Citus imposes on a table distributed by ``bank_id``; the suite's partitioned run proves the schema and
every later migration keep to it.

Only on empty tables: it drops and recreates them. On an install that holds rows it refuses and changes
nothing; such an install moves by dump and restore into a fresh partitioned one, or straight to Citus
(docs/scaling.md). With the setting off this migration does nothing, and turning the setting on after it
ran changes nothing either.

Each table is recreated from the catalogue, so nothing is listed twice: its columns with their defaults,
identity and generated expressions (``LIKE ... INCLUDING``), then under their own names its keys, indexes
(GIN full text, btree_gin, partial and HNSW indexes: each is built on the partitioned parent, hence on every
partition), extended statistics, triggers (the conversation-context triggers of 0028), and the foreign keys
from and to it. The identity sequence keeps its name and position.
"""

import re

from django.conf import settings
from django.db import migrations

# The tables distributed by bank_id (docs/scaling.md, create_distributed_table). banks_bank, tokens and
# memberships are reference data; audit events and jobs outlive their bank and stay unpartitioned.
TABLES = [
    "banks_memory", "banks_entity", "banks_memoryentity", "banks_entitylink", "banks_memorylink",
    "banks_duplicatepair", "banks_observation", "banks_observationevidence", "banks_mentalmodel",
    "banks_mentalmodelrevision", "banks_wikipage", "banks_legalhold", "banks_lifecyclepolicy",
    "banks_banktagindex", "banks_banktextstatistics", "banks_banklexeme", "banks_bankusage",
    "banks_memoryaccess", "portability_pendinglink",
]

MAX_PARTITIONS = 1024


class PartitionRefused(RuntimeError):
    pass


def _rows(cursor, sql, params=()):  # noqa: ANN001, ANN202
    cursor.execute(sql, params)
    return cursor.fetchall()


def _on_table(definition: str, table: str) -> str:
    """An index or trigger definition read from the catalogue names its table schema-qualified."""
    return re.sub(rf" ON (ONLY )?(public\.)?{table} ", f" ON {table} ", definition, count=1)


def _capture(cursor, table: str) -> dict:  # noqa: ANN001
    oid = _rows(cursor, "SELECT %s::regclass::oid", [table])[0][0]
    return {
        "keys": _rows(cursor, "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                              "WHERE conrelid = %s AND contype IN ('p', 'u', 'x') ORDER BY contype, conname", [oid]),
        "indexes": [_on_table(d, table) for (d,) in _rows(
            cursor, "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = %s AND NOT EXISTS "
                    "(SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = %s) "
                    "ORDER BY i.indexrelid", [oid, oid])],
        "statistics": [d for (d,) in _rows(cursor, "SELECT pg_get_statisticsobjdef(oid) FROM pg_statistic_ext "
                                                   "WHERE stxrelid = %s ORDER BY oid", [oid])],
        "triggers": [_on_table(d, table) for (d,) in _rows(
            cursor, "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = %s AND NOT tgisinternal "
                    "ORDER BY tgname", [oid])],
        "reloptions": _rows(cursor, "SELECT reloptions FROM pg_class WHERE oid = %s", [oid])[0][0],
        "sequence": _rows(cursor, "SELECT s.seqrelid::regclass::text FROM pg_depend d "
                                  "JOIN pg_sequence s ON s.seqrelid = d.objid "
                                  "WHERE d.refobjid = %s AND d.classid = 'pg_class'::regclass "
                                  "AND d.deptype IN ('a', 'i')", [oid]),
    }


def _foreign_keys(cursor, tables: list[str]) -> list[tuple[str, str, str]]:  # noqa: ANN001
    """Every foreign key from or to one of ``tables``: (table it is on, name, definition)."""
    return _rows(cursor, "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
                         "WHERE contype = 'f' AND conparentid = 0 AND (conrelid = ANY(%s::regclass[]) OR confrelid = ANY(%s::regclass[])) "
                         "ORDER BY conrelid::regclass::text, conname", [tables, tables])


def partition_bank_tables(apps, schema_editor) -> None:  # noqa: ANN001
    partitions = int(getattr(settings, "MEMORYHUB_BANK_PARTITIONS", 0) or 0)
    if partitions <= 0:
        return
    if partitions > MAX_PARTITIONS:
        raise PartitionRefused(f"MEMORYHUB_BANK_PARTITIONS={partitions}: at most {MAX_PARTITIONS} partitions")
    with schema_editor.connection.cursor() as cursor:
        tables = [t for t in TABLES if _rows(cursor, "SELECT to_regclass(%s) IS NOT NULL", [t])[0][0]
                  and _rows(cursor, "SELECT relkind FROM pg_class WHERE oid = %s::regclass", [t])[0][0] == "r"]
        holding = [t for t in tables if _rows(cursor, f"SELECT EXISTS (SELECT 1 FROM {t})")[0][0]]  # noqa: S608
        if holding:
            raise PartitionRefused(
                "MEMORYHUB_BANK_PARTITIONS partitions the bank tables of a fresh install only, and these hold "
                f"rows: {', '.join(holding)}. Nothing was changed. Move the data into a new partitioned install "
                "(docs/scaling.md, 'The partitioned install'), or unset MEMORYHUB_BANK_PARTITIONS.")
        captured = {t: _capture(cursor, t) for t in tables}
        foreign_keys = _foreign_keys(cursor, tables)
        for table in tables:
            sequences = captured[table]["sequence"]
            positions = [_rows(cursor, f"SELECT last_value, is_called FROM {s}")[0] for (s,) in sequences]  # noqa: S608
            cursor.execute(f"ALTER TABLE {table} RENAME TO {table}__unpartitioned")
            cursor.execute(
                f"CREATE TABLE {table} (LIKE {table}__unpartitioned INCLUDING DEFAULTS INCLUDING IDENTITY "
                "INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION "
                "INCLUDING COMMENTS) PARTITION BY HASH (bank_id)")
            new_sequences = _rows(cursor, "SELECT s.seqrelid::regclass::text FROM pg_depend d "
                                          "JOIN pg_sequence s ON s.seqrelid = d.objid "
                                          "WHERE d.refobjid = %s::regclass AND d.deptype IN ('a', 'i')", [table])
            cursor.execute(f"DROP TABLE {table}__unpartitioned CASCADE")
            # The identity sequence keeps its name (anything that names it still finds it) and its position.
            for (old,), (new,), (last, called) in zip(sequences, new_sequences, positions, strict=True):
                if new != old:
                    cursor.execute(f"ALTER SEQUENCE {new} RENAME TO {old.split('.')[-1]}")
                cursor.execute("SELECT setval(%s, %s, %s)", [old, last, called])
            options = captured[table]["reloptions"]
            for remainder in range(partitions):
                cursor.execute(f"CREATE TABLE {table}_p{remainder} PARTITION OF {table} "
                               f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})")
                if options:
                    cursor.execute(f"ALTER TABLE {table}_p{remainder} SET ({', '.join(options)})")
        for table in tables:
            for name, definition in captured[table]["keys"]:
                cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
            for statement in (*captured[table]["indexes"], *captured[table]["statistics"],
                              *captured[table]["triggers"]):
                cursor.execute(statement)
        for table, name, definition in foreign_keys:
            cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
        _name_partition_indexes(cursor, tables)


def _name_partition_indexes(cursor, tables: list[str]) -> None:  # noqa: ANN001
    """Each partition's copy of an index is named after it (``memory_hnsw_384_p0``), not after the
    partition's columns, so a plan names the index it uses as on an unpartitioned install."""
    for parent, child, table in _rows(
            cursor, "SELECT p.relname, c.relname, t.relname FROM pg_inherits i "
                    "JOIN pg_class p ON p.oid = i.inhparent JOIN pg_class c ON c.oid = i.inhrelid "
                    "JOIN pg_index x ON x.indexrelid = c.oid JOIN pg_class t ON t.oid = x.indrelid "
                    "JOIN pg_index px ON px.indexrelid = p.oid "
                    "WHERE px.indrelid = ANY(%s::regclass[])", [tables]):
        suffix = table[table.rindex("_p"):]
        name = parent[:63 - len(suffix)] + suffix
        if name != child:
            cursor.execute(f'ALTER INDEX "{child}" RENAME TO "{name}"')


class Migration(migrations.Migration):
    dependencies = [
        ("banks", "0033_bank_leading_keys"),
        ("portability", "0002_bank_leading_key"),
    ]

    operations = [
        # Going back leaves the tables partitioned: they hold the same columns, keys and indexes.
        migrations.RunPython(partition_bank_tables, migrations.RunPython.noop, elidable=False),
    ]
