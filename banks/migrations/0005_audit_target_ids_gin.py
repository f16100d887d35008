from django.contrib.postgres.indexes import GinIndex
from django.db import migrations


class Migration(migrations.Migration):
    """A memory's history page looks its audit events up by target id (``target_ids @> ARRAY[id]``)."""

    dependencies = [("banks", "0004_repair_out_of_range_times")]

    operations = [
        migrations.AddIndex(
            model_name="auditevent",
            index=GinIndex(fields=["target_ids"], name="audit_target_ids_gin"),
        ),
    ]
