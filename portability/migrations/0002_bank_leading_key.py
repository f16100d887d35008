"""The pending link's primary key leads with the bank, ``(bank_id, id)``, like every bank table's
(banks.0033; docs/scaling.md "Keys that lead with the bank"). Built online: the new key's index
``CONCURRENTLY``, then a swap of the key that does not scan the table."""

from django.db import migrations

TABLE = "portability_pendinglink"


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("portability", "0001_pending_links"),
    ]

    operations = [
        migrations.RunSQL(
            f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {TABLE}_bank_pkey ON {TABLE} (bank_id, id)",
            f"DROP INDEX CONCURRENTLY IF EXISTS {TABLE}_bank_pkey"),
        migrations.RunSQL(
            f"ALTER TABLE {TABLE} DROP CONSTRAINT {TABLE}_pkey, "
            f"ADD CONSTRAINT {TABLE}_pkey PRIMARY KEY USING INDEX {TABLE}_bank_pkey",
            f"ALTER TABLE {TABLE} DROP CONSTRAINT {TABLE}_pkey, "
            f"ADD CONSTRAINT {TABLE}_pkey PRIMARY KEY USING INDEX {TABLE}_id_key"),
        # Only for going back: the old key's unique index on id, built before the swap back.
        migrations.RunSQL(
            f"DROP INDEX CONCURRENTLY IF EXISTS {TABLE}_id_key",
            f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {TABLE}_id_key ON {TABLE} (id)"),
    ]
