"""Near-duplicate pairs found by the background scan, kept per bank for the review page; indexes that
keep time travel and the audit page from reading a whole bank (built concurrently: writes go on);
``bank_id`` on every bank table (backfilled a chunk at a time, then kept by the services and, for any
insert that leaves it out, by a trigger) and in every unique constraint between bank tables.
"""

import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


# (table, parent table, column pointing at the parent): the new bank_id is the parent's.
CHILDREN = [
    ("banks_memoryentity", "banks_memory", "memory_id"),
    ("banks_observationevidence", "banks_observation", "observation_id"),
    ("banks_mentalmodelrevision", "banks_mentalmodel", "model_id"),
]
BACKFILL_CHUNK = 50_000


def backfill(apps, schema_editor):  # noqa: ANN001, ANN201
    """Copy the parent's bank into each row, a range of ids per statement (the migration is not atomic,
    so each range commits and no long lock is held on a big table)."""
    with schema_editor.connection.cursor() as cursor:
        for table, parent, column in CHILDREN:
            cursor.execute(f"SELECT coalesce(max(id), 0) FROM {table}")  # noqa: S608  (fixed names)
            top = cursor.fetchone()[0]
            for start in range(0, top + 1, BACKFILL_CHUNK):
                cursor.execute(
                    f"UPDATE {table} t SET bank_id = p.bank_id FROM {parent} p "  # noqa: S608  (fixed names)
                    f"WHERE p.id = t.{column} AND t.id > %s AND t.id <= %s AND t.bank_id IS NULL",
                    [start, start + BACKFILL_CHUNK])


def _trigger_sql(table: str, parent: str, column: str) -> str:
    return (
        f"CREATE OR REPLACE FUNCTION {table}_fill_bank() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN IF NEW.bank_id IS NULL THEN SELECT bank_id INTO NEW.bank_id FROM {parent} WHERE id = NEW.{column}; "
        f"END IF; RETURN NEW; END $$; "
        f"DROP TRIGGER IF EXISTS {table}_fill_bank ON {table}; "
        f"CREATE TRIGGER {table}_fill_bank BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {table}_fill_bank();"
    )


def _drop_trigger_sql(table: str) -> str:
    return f"DROP TRIGGER IF EXISTS {table}_fill_bank ON {table}; DROP FUNCTION IF EXISTS {table}_fill_bank();"


def _bank_field(null: bool) -> models.ForeignKey:
    return models.ForeignKey(null=null, on_delete=django.db.models.deletion.CASCADE, related_name="+",
                             to="banks.bank", db_index=False)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("banks", "0014_text_search_language"),
    ]

    operations = [
        migrations.CreateModel(
            name="DuplicatePair",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("similarity", models.FloatField()),
                ("found_at", models.DateTimeField(auto_now_add=True)),
                ("bank", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                           related_name="duplicate_pairs", to="banks.bank")),
                ("memory_a", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                               to="banks.memory")),
                ("memory_b", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                               to="banks.memory")),
            ],
            options={
                "indexes": [models.Index(fields=["bank", "-similarity"], name="duplicate_pair_bank_sim")],
                "constraints": [
                    models.UniqueConstraint(fields=("bank", "memory_a", "memory_b"),
                                            name="duplicate_pair_unique_per_bank"),
                    models.CheckConstraint(condition=models.Q(("memory_a__lt", models.F("memory_b"))),
                                           name="duplicate_pair_ordered"),
                ],
            },
        ),
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(condition=models.Q(("archived_at__isnull", False)), fields=["bank", "archived_at"],
                               name="memory_bank_archived"),
        ),
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(condition=models.Q(("forgotten_at__isnull", False)), fields=["bank", "forgotten_at"],
                               name="memory_bank_forgotten"),
        ),
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(fields=["bank", "id"], name="memory_bank_pk"),
        ),
        # The foreign key's own index on bank_id alone is now redundant (memory_bank_pk leads with it).
        migrations.AlterField(
            model_name="memory", name="bank",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="memories", to="banks.bank"),
        ),
        AddIndexConcurrently(
            model_name="auditevent",
            index=models.Index(fields=["bank_ref", "-created_at", "-id"], name="audit_bank_ref_created"),
        ),
        # bank_id where it was missing: nullable first, backfilled, filled by a trigger, then required.
        migrations.AddField(model_name="memoryentity", name="bank", field=_bank_field(null=True)),
        migrations.AddField(model_name="observationevidence", name="bank", field=_bank_field(null=True)),
        migrations.AddField(model_name="mentalmodelrevision", name="bank", field=_bank_field(null=True)),
        *[migrations.RunSQL(_trigger_sql(*child), _drop_trigger_sql(child[0])) for child in CHILDREN],
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField(model_name="memoryentity", name="bank", field=_bank_field(null=False)),
        migrations.AlterField(model_name="observationevidence", name="bank", field=_bank_field(null=False)),
        migrations.AlterField(model_name="mentalmodelrevision", name="bank", field=_bank_field(null=False)),
        # Unique constraints between bank tables lead with bank_id (same names: writers name them in ON CONFLICT).
        migrations.RemoveConstraint(model_name="memoryentity", name="memory_entity_unique"),
        migrations.AddConstraint(model_name="memoryentity", constraint=models.UniqueConstraint(
            fields=("bank", "memory", "entity"), name="memory_entity_unique")),
        migrations.RemoveConstraint(model_name="observationevidence", name="observation_evidence_unique"),
        migrations.AddConstraint(model_name="observationevidence", constraint=models.UniqueConstraint(
            fields=("bank", "observation", "memory_ref"), name="observation_evidence_unique")),
        migrations.RemoveConstraint(model_name="mentalmodelrevision", name="revision_number_unique"),
        migrations.AddConstraint(model_name="mentalmodelrevision", constraint=models.UniqueConstraint(
            fields=("bank", "model", "number"), name="revision_number_unique")),
        migrations.RemoveConstraint(model_name="memorylink", name="memory_link_unique"),
        migrations.AddConstraint(model_name="memorylink", constraint=models.UniqueConstraint(
            fields=("bank", "source", "target", "link_type"), name="memory_link_unique")),
        migrations.RemoveConstraint(model_name="entitylink", name="entity_link_unique"),
        migrations.AddConstraint(model_name="entitylink", constraint=models.UniqueConstraint(
            fields=("bank", "entity_a", "entity_b", "link_type"), name="entity_link_unique")),
    ]
