"""The review page's order (similarity descending, then id) as an index, so reading a bank's first
pairs stops at them instead of sorting all of its pairs. Built before the old index goes, both
concurrently: the pairs table keeps taking the scan's writes meanwhile."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE/DROP INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("banks", "0023_tag_vector_indexes"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="duplicatepair",
            index=models.Index(fields=["bank", "-similarity", "id"], name="duplicate_pair_bank_sim_id"),
        ),
        RemoveIndexConcurrently(model_name="duplicatepair", name="duplicate_pair_bank_sim"),
    ]
