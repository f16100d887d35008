"""The table behind the default (database) cache, so rate limits are shared by every web process.

Created here rather than only by ``createcachetable`` at start, so a deployment that just runs
``migrate`` has it too; the name is fixed (memoryhub.settings.CACHE_TABLE) whatever CACHES says today.
"""

from django.core.management import call_command
from django.db import migrations

CACHE_TABLE = "memoryhub_cache"


def create(apps, schema_editor):  # noqa: ANN001, ANN201
    call_command("createcachetable", CACHE_TABLE, database=schema_editor.connection.alias, verbosity=0)


def drop(apps, schema_editor):  # noqa: ANN001, ANN201
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(CACHE_TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("banks", "0010_webhook_sources")]

    operations = [migrations.RunPython(create, drop)]
