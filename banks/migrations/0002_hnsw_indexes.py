"""Partial HNSW indexes (cosine) on the embedding column, one per common dimension.

The column is untyped so banks can use embedders of different sizes; each index
covers the rows of one size through a cast, which recall repeats verbatim.
"""

from django.db import migrations

DIMENSIONS = (384, 768, 1024, 1536)


def _create(table: str, prefix: str) -> list[migrations.RunSQL]:
    return [
        migrations.RunSQL(
            f"CREATE INDEX IF NOT EXISTS {prefix}_hnsw_{d} ON {table} USING hnsw "
            f"((embedding::vector({d})) vector_cosine_ops) WHERE embedding_dims = {d}",
            f"DROP INDEX IF EXISTS {prefix}_hnsw_{d}",
        )
        for d in DIMENSIONS
    ]


class Migration(migrations.Migration):
    dependencies = [("banks", "0001_initial")]

    operations = _create("banks_memory", "memory") + _create("banks_observation", "observation")
