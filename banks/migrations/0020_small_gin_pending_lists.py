# The memory full-text and tag indexes keep a small pending list (256 kB instead of the 4 MB default).
# Rows written since the last merge wait in that list and every search scans all of it: on a bank taking
# a steady stream of retains, keyword recall read ~190 pending pages per question (35 ms instead of 15)
# and the planner switched to scanning the whole bank. The storage parameter is changed in place
# (no rebuild); the model state records it on the GinIndex.

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations

KB = 256


class Migration(migrations.Migration):

    dependencies = [
        ('banks', '0019_unlogged_rate_counters'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f"ALTER INDEX memory_search_gin SET (gin_pending_list_limit = {KB}); "
                    f"ALTER INDEX memory_tags_gin SET (gin_pending_list_limit = {KB});",
                    reverse_sql="ALTER INDEX memory_search_gin RESET (gin_pending_list_limit); "
                                "ALTER INDEX memory_tags_gin RESET (gin_pending_list_limit);",
                ),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name='memory', name='memory_tags_gin'),
                migrations.RemoveIndex(model_name='memory', name='memory_search_gin'),
                migrations.AddIndex(
                    model_name='memory',
                    index=GinIndex(fields=['tags'], gin_pending_list_limit=KB, name='memory_tags_gin'),
                ),
                migrations.AddIndex(
                    model_name='memory',
                    index=GinIndex(fields=['search_vector'], gin_pending_list_limit=KB, name='memory_search_gin'),
                ),
            ],
        ),
    ]
