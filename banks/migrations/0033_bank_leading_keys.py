"""Keys that lead with the bank: every bank table's primary key becomes ``(bank_id, id)`` and every foreign
key between bank tables ``(bank_id, x_id) REFERENCES parent (bank_id, id)``, so PostgreSQL itself refuses a
row that points into another bank, and the schema is one Citus can distribute by ``bank_id``
(docs/scaling.md, "Keys that lead with the bank").

Django keeps ``id`` as each model's primary key (a ForeignKey cannot point at a composite key in Django 5.2,
and ``id`` stays unique by construction: one identity sequence per table); only the database's keys change.
The foreign key fields become ``db_constraint=False`` in Django's state and the composite constraints are
written here, since Django has no composite foreign key.

Online, for a big install (not atomic: each statement commits on its own, no lock is held for long):
1. the new key's unique index ``(bank_id, id)``, and a plain index on ``id`` for the lookups by id that
   remain, are built ``CONCURRENTLY``;
2. each composite foreign key is added ``NOT VALID`` (a brief lock, no scan) and then validated (a scan that
   lets writes go on);
3. the old one-column foreign keys are dropped, and each table's primary key is swapped for the new index
   (``ADD CONSTRAINT ... PRIMARY KEY USING INDEX``: the columns are already NOT NULL, so no scan), each in a
   statement of its own that only waits for the transactions running on the table.
No backfill is needed: every child table got ``bank_id`` in 0015.
"""

import django.db.models.deletion
from django.contrib.postgres.operations import RemoveIndexConcurrently
from django.db import migrations, models

# Every table that belongs to one bank and whose primary key was ``id`` (banks_bankusage and
# banks_banktextstatistics are keyed by bank_id already; portability_pendinglink is done by portability.0002).
TABLES = [
    "banks_memory", "banks_entity", "banks_memoryentity", "banks_entitylink", "banks_memorylink",
    "banks_observation", "banks_observationevidence", "banks_mentalmodel", "banks_mentalmodelrevision",
    "banks_wikipage", "banks_duplicatepair", "banks_legalhold", "banks_lifecyclepolicy", "banks_banklexeme",
    "banks_banktagindex", "banks_memoryaccess",
]

# (table, column, parent table): each becomes FOREIGN KEY (bank_id, column) REFERENCES parent (bank_id, id).
FOREIGN_KEYS = [
    ("banks_memory", "merged_into_id", "banks_memory"),
    ("banks_memoryentity", "memory_id", "banks_memory"),
    ("banks_memoryentity", "entity_id", "banks_entity"),
    ("banks_entitylink", "entity_a_id", "banks_entity"),
    ("banks_entitylink", "entity_b_id", "banks_entity"),
    ("banks_memorylink", "source_id", "banks_memory"),
    ("banks_memorylink", "target_id", "banks_memory"),
    ("banks_observationevidence", "observation_id", "banks_observation"),
    ("banks_observationevidence", "memory_id", "banks_memory"),
    ("banks_mentalmodelrevision", "model_id", "banks_mentalmodel"),
    ("banks_duplicatepair", "memory_a_id", "banks_memory"),
    ("banks_duplicatepair", "memory_b_id", "banks_memory"),
]


def key_index_ops(table: str) -> list[migrations.RunSQL]:
    return [
        migrations.RunSQL(
            f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {table}_bank_pkey ON {table} (bank_id, id)",
            f"DROP INDEX CONCURRENTLY IF EXISTS {table}_bank_pkey"),
        # Lookups by id alone (a statement that does not name its bank yet) keep an index. Not unique: a
        # distributed table may not have a unique index without bank_id, and id is unique by construction.
        migrations.RunSQL(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {table}_id_lookup ON {table} (id)",
            f"DROP INDEX CONCURRENTLY IF EXISTS {table}_id_lookup"),
    ]


def in_lock_order(table: str, parent: str, sql: str) -> str:
    """``sql`` (which locks both tables) in a transaction that locks the parent first, as every writer does
    (a retain inserts the memory, then its mentions): taking the child first could deadlock with a writer
    holding the parent and waiting for the child, and the deadlock detector might then end the migration."""
    return (f"BEGIN; LOCK TABLE {parent} IN SHARE ROW EXCLUSIVE MODE; "
            f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE; {sql}; COMMIT")


def composite_fk_ops(table: str, column: str, parent: str) -> list[migrations.RunSQL]:
    name = f"{table}_{column}_bank_fk"
    return [
        migrations.RunSQL(
            in_lock_order(table, parent, f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (bank_id, {column}) "
                                         f"REFERENCES {parent} (bank_id, id) DEFERRABLE INITIALLY DEFERRED NOT VALID"),
            in_lock_order(table, parent, f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")),
        migrations.RunSQL(f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}", migrations.RunSQL.noop),
    ]


def drop_single_fk_op(table: str, column: str, parent: str) -> migrations.RunSQL:
    """Drop the one-column foreign key Django made (its name carries a hash: found in the catalogue)."""
    drop = f"""
DO $$ DECLARE name text; BEGIN
    SELECT c.conname INTO name FROM pg_constraint c
    WHERE c.conrelid = '{table}'::regclass AND c.contype = 'f' AND c.confrelid = '{parent}'::regclass
      AND c.conkey = ARRAY[(SELECT attnum FROM pg_attribute
                            WHERE attrelid = '{table}'::regclass AND attname = '{column}')]::int2[];
    IF name IS NOT NULL THEN EXECUTE format('ALTER TABLE {table} DROP CONSTRAINT %I', name); END IF;
END $$"""
    restore = (f"ALTER TABLE {table} ADD CONSTRAINT {table}_{column}_fk FOREIGN KEY ({column}) "
               f"REFERENCES {parent} (id) DEFERRABLE INITIALLY DEFERRED NOT VALID; "
               f"ALTER TABLE {table} VALIDATE CONSTRAINT {table}_{column}_fk")
    return migrations.RunSQL(in_lock_order(table, parent, drop), in_lock_order(table, parent, restore))


def primary_key_ops(table: str) -> list[migrations.RunSQL]:
    return [
        migrations.RunSQL(
            f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, "
            f"ADD CONSTRAINT {table}_pkey PRIMARY KEY USING INDEX {table}_bank_pkey",
            # Going back: the composite foreign keys that lean on this key go with it (CASCADE); the old
            # one-column ones are restored after it.
            f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey CASCADE, "
            f"ADD CONSTRAINT {table}_pkey PRIMARY KEY USING INDEX {table}_id_key"),
        # Only for going back: the old key's unique index on id, built before the swap back.
        migrations.RunSQL(
            f"DROP INDEX CONCURRENTLY IF EXISTS {table}_id_key",
            f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {table}_id_key ON {table} (id)"),
    ]


def _fk(to: str, on_delete=django.db.models.deletion.CASCADE, **kwargs) -> models.ForeignKey:  # noqa: ANN001
    return models.ForeignKey(to=to, on_delete=on_delete, db_constraint=False, **kwargs)


# Django's view of the foreign keys: no constraint of its own (the composite ones above stand in).
STATE = [
    ("memory", "merged_into", _fk("banks.memory", django.db.models.deletion.SET_NULL, null=True, blank=True,
                                  related_name="+")),
    ("memoryentity", "memory", _fk("banks.memory")),
    ("memoryentity", "entity", _fk("banks.entity")),
    ("entitylink", "entity_a", _fk("banks.entity", related_name="links_out")),
    ("entitylink", "entity_b", _fk("banks.entity", related_name="links_in")),
    ("memorylink", "source", _fk("banks.memory", related_name="links_out")),
    ("memorylink", "target", _fk("banks.memory", related_name="links_in")),
    ("observationevidence", "observation", _fk("banks.observation", related_name="evidence")),
    ("observationevidence", "memory", _fk("banks.memory", django.db.models.deletion.SET_NULL, null=True,
                                          blank=True)),
    ("mentalmodelrevision", "model", _fk("banks.mentalmodel", related_name="revisions")),
    ("duplicatepair", "memory_a", _fk("banks.memory", related_name="+")),
    ("duplicatepair", "memory_b", _fk("banks.memory", related_name="+")),
]


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("banks", "0032_bank_scoped_observation_text_index"),
    ]

    operations = [
        *[op for table in TABLES for op in key_index_ops(table)],
        *[op for fk in FOREIGN_KEYS for op in composite_fk_ops(*fk)],
        *[drop_single_fk_op(*fk) for fk in FOREIGN_KEYS],
        *[op for table in TABLES for op in primary_key_ops(table)],
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AlterField(model_name=model, name=name, field=field)
                              for model, name, field in STATE]),
        # The primary key (bank_id, id) now serves what this index did.
        RemoveIndexConcurrently(model_name="memory", name="memory_bank_pk"),
    ]
