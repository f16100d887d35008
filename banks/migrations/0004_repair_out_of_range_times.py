"""Repair times stored before they were checked at every edge (``manage.py check_banks`` repairs the same
through the live code). A frozen copy of that SQL: a migration never imports live services, whose code
moves on while this migration must run as it was written."""

from datetime import UTC, datetime

from django.db import migrations

_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)

# (table, column, assignments) as they stood when this migration was written.
_FIXES = (
    ("banks_memory", "occurred_at",
     "occurred_at = NULL, metadata = metadata || jsonb_build_object('_repaired_occurred_at', occurred_at::text)"),
    ("banks_memory", "created_at",
     "created_at = CASE WHEN retained_at BETWEEN %(earliest)s AND %(latest)s THEN retained_at ELSE now() END, "
     "metadata = metadata || jsonb_build_object('_repaired_created_at', created_at::text)"),
    ("banks_memory", "retained_at", "retained_at = now()"),
    ("banks_observationevidence", "evidence_at", "evidence_at = attached_at"),
)


def repair(apps, schema_editor):  # noqa: ANN001, ANN201
    params = {"earliest": _EARLIEST, "latest": _LATEST}
    with schema_editor.connection.cursor() as cursor:
        for table, column, fix in _FIXES:
            # Names and assignments come from the constant above, never from input.
            cursor.execute(f"UPDATE {table} SET {fix} WHERE {column} < %(earliest)s OR {column} > %(latest)s",  # noqa: S608
                           params)


class Migration(migrations.Migration):
    dependencies = [("banks", "0003_drop_global_retained_at_index")]

    operations = [migrations.RunPython(repair, migrations.RunPython.noop)]
