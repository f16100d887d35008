"""Big banks get their own partial HNSW index; the shared ones leave their rows out.

* ``own_vector_index`` on the bank (set by banks.services.vector_indexes) and on each memory
  row (the copy a partial index predicate can test);
* a trigger copies the bank's flag onto every inserted row, whoever inserts it, taking a key
  share lock on the bank row so a bank switching over (which locks it FOR UPDATE) never misses a
  row committed meanwhile;
* the shared HNSW indexes are rebuilt with ``AND NOT own_vector_index`` (concurrently, under
  their old names, so recall keeps its index throughout);
* a small partial index finds the memories a big import stored before their vectors.
"""

from django.db import migrations, models

DIMENSIONS = (384, 768, 1024, 1536)

TRIGGER = """
CREATE OR REPLACE FUNCTION memory_vector_index_tier() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT b.own_vector_index INTO NEW.own_vector_index FROM banks_bank b WHERE b.id = NEW.bank_id FOR KEY SHARE;
    NEW.own_vector_index := COALESCE(NEW.own_vector_index, false);
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS memory_vector_index_tier ON banks_memory;
CREATE TRIGGER memory_vector_index_tier BEFORE INSERT ON banks_memory FOR EACH ROW
    WHEN (NOT NEW.own_vector_index) EXECUTE FUNCTION memory_vector_index_tier();
"""
DROP_TRIGGER = ("DROP TRIGGER IF EXISTS memory_vector_index_tier ON banks_memory; "
                "DROP FUNCTION IF EXISTS memory_vector_index_tier()")


def _shared(d: int, predicate: str) -> list[str]:
    return [
        # A build interrupted earlier leaves an invalid index under that name: start afresh.
        f"DROP INDEX CONCURRENTLY IF EXISTS memory_hnsw_{d}_next",
        f"CREATE INDEX CONCURRENTLY memory_hnsw_{d}_next ON banks_memory USING hnsw "
        f"((embedding::vector({d})) vector_cosine_ops) WHERE {predicate}",
        f"DROP INDEX CONCURRENTLY IF EXISTS memory_hnsw_{d}",
        f"ALTER INDEX memory_hnsw_{d}_next RENAME TO memory_hnsw_{d}",
    ]


def _rebuild(d: int) -> migrations.RunSQL:
    return migrations.RunSQL(_shared(d, f"embedding_dims = {d} AND NOT own_vector_index"),
                             _shared(d, f"embedding_dims = {d}"))


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("banks", "0017_rate_counters")]

    operations = [
        migrations.AddField(model_name="bank", name="own_vector_index",
                            field=models.BooleanField(default=False, db_default=False)),
        migrations.AddField(model_name="memory", name="own_vector_index",
                            field=models.BooleanField(default=False, db_default=False)),
        migrations.RunSQL(TRIGGER, DROP_TRIGGER),
        *[_rebuild(d) for d in DIMENSIONS],
        migrations.AddIndex(model_name="memory", index=models.Index(
            fields=["bank", "id"], condition=models.Q(embedding_dims__isnull=True, forgotten_at__isnull=True),
            name="memory_pending_vectors")),
    ]
