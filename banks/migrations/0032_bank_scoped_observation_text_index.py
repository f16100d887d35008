"""The observations' full-text index leads with the bank, as the memories' does since 0026.

One GIN over every bank's observation words made a search of one bank's observations walk a word's
postings across every bank, then drop the other banks' rows from the table. GIN on ``(bank_id,
search_vector)`` through btree_gin (the extension 0026 created) intersects the word's postings with
the bank's. Built concurrently before the old index goes, with the same small pending list: writes
go on meanwhile.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations


class Migration(migrations.Migration):
    atomic = False  # CREATE/DROP INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("banks", "0031_entity_bank_mentions"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="observation",
            index=GinIndex(fields=["bank", "search_vector"], gin_pending_list_limit=256,
                           name="observation_bank_search_gin"),
        ),
        RemoveIndexConcurrently(model_name="observation", name="observation_search_gin"),
    ]
