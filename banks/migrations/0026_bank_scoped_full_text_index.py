"""The full-text index leads with the bank: GIN on ``(bank_id, search_vector)`` through btree_gin.

On one GIN over every bank's words, a question holding a word that is frequent in another tenant's
bank walked that word's whole posting list, and the planner then read the other bank's rows too
(a 3,000-memory bank's keyword arm took 399 ms beside a 100,000-memory neighbour whose memories
all held the question's words, 2.5 ms without it). With the bank's own entry in the same index,
the scan intersects the word's posting tree with the bank's, skipping to the bank's rows. A search
of every bank (the admin's) still uses the index, on its second column alone.

Built concurrently before the old index goes, with the same small pending list (migration 0020):
retains and imports keep writing meanwhile.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import (
    AddIndexConcurrently,
    BtreeGinExtension,
    RemoveIndexConcurrently,
)
from django.db import migrations


class Migration(migrations.Migration):
    atomic = False  # CREATE/DROP INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("banks", "0025_webhook_signature_schemes"),
    ]

    operations = [
        BtreeGinExtension(),
        AddIndexConcurrently(
            model_name="memory",
            index=GinIndex(fields=["bank", "search_vector"], gin_pending_list_limit=256, name="memory_bank_search_gin"),
        ),
        RemoveIndexConcurrently(model_name="memory", name="memory_search_gin"),
    ]
