"""A bank's entities by mention count: the bank map and the graph page list the most mentioned
entities of a bank; without it each view sorted every entity of the bank (100,000 in a big one).
Built concurrently: retains and imports keep writing meanwhile."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("banks", "0030_memory_access_log"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="entity",
            index=models.Index(fields=["bank", "-mention_count", "name"], name="entity_bank_mentions"),
        ),
    ]
