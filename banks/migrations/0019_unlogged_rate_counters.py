# Rate-limit counters are written on every API request and worth nothing after a crash (a window that
# restarts early only forgives a few requests). As an unlogged table they skip the write-ahead log, so
# the upsert's commit does not wait for a disk flush, which on a busy server was most of its cost.
# (PostgreSQL empties an unlogged table after a crash, and streaming replicas do not carry its rows:
# rate counts are read and written on the primary only.)

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('banks', '0018_bank_vector_indexes'),
    ]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memoryhub_rate_counter SET UNLOGGED",
            reverse_sql="ALTER TABLE memoryhub_rate_counter SET LOGGED",
        ),
    ]
