"""Repair times stored before they were checked at every edge (see banks.services.time_repair)."""

from django.db import migrations


def repair(apps, schema_editor):  # noqa: ANN001, ANN201
    from banks.services.time_repair import out_of_range_times

    with schema_editor.connection.cursor() as cursor:
        out_of_range_times(cursor, repair=True)


class Migration(migrations.Migration):
    dependencies = [("banks", "0003_drop_global_retained_at_index")]

    operations = [migrations.RunPython(repair, migrations.RunPython.noop)]
