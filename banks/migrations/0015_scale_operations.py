"""Near-duplicate pairs found by the background scan, kept per bank for the review page; indexes that
keep time travel and the audit page from reading a whole bank (built concurrently: writes go on)."""

import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("banks", "0011_shared_cache_table"),
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
            model_name="auditevent",
            index=models.Index(fields=["bank_ref", "-created_at", "-id"], name="audit_bank_ref_created"),
        ),
    ]
