"""Near-duplicate pairs found by the background scan, kept per bank for the review page."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
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
    ]
