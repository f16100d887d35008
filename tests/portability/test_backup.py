"""`manage.py backup` / `restore`: a backup taken from the running test database, restored by the
command into a PostgreSQL started on a fresh data directory, holds the same rows."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from banks.models import Memory
from banks.services.memories import memory_retain
from memoryhub.embedded import embedded_database_url, release_embedded_database
from tests.worker import REPO

pytestmark = pytest.mark.django_db(transaction=True)


def row_counts(cursor) -> dict[str, int]:  # noqa: ANN001
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
    tables = [name for (name,) in cursor.fetchall()]
    counts = {}
    for table in tables:
        # Table names come from pg_tables of our own test database, not from input.
        cursor.execute(f'SELECT count(*) FROM "{table}"')  # noqa: S608
        counts[table] = cursor.fetchone()[0]
    return counts


def test_backup_restores_into_a_fresh_data_directory_with_the_same_rows(bank, make_token, tmp_path, settings,
                                                                       server_dir):
    root = tmp_path / "archives"
    root.mkdir()
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(root)
    for text in ("Alice likes jazz.", "Alice moved to Lyon in 2021.", "Alice's cat is called Miso."):
        memory_retain(bank=bank, text=text, actor="test", tags=["alice"])
    make_token()

    call_command("backup")
    [backup] = (root / "backups").iterdir()
    assert backup.name.startswith("memoryhub-") and backup.suffix == ".pgdump"
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    with connection.cursor() as cursor:
        before = row_counts(cursor)
    assert before["banks_memory"] == 3 and before["banks_apitoken"] == 1

    fresh = server_dir / "fresh-pg"
    url = embedded_database_url(fresh)
    try:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "MEMORYHUB_EMBEDDED_DATABASE_URL": url,
               "SECRET_KEY": settings.SECRET_KEY, "MEMORYHUB_VAR_DIR": str(tmp_path / "var"),
               "MEMORYHUB_PORTABILITY_ROOTS": str(root)}
        env.pop("DATABASE_URL", None)
        result = subprocess.run([sys.executable, "manage.py", "restore", str(backup), "--no-input"], cwd=REPO,
                                env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Restored" in result.stdout
        with psycopg.connect(url) as restored, restored.cursor() as cursor:
            assert row_counts(cursor) == before
            cursor.execute("SELECT count(*) FROM banks_memory WHERE embedding IS NOT NULL")
            assert cursor.fetchone()[0] == Memory.objects.filter(embedding__isnull=False).count() == 3
    finally:
        release_embedded_database(fresh)


def test_backup_refuses_a_path_outside_the_roots_and_restore_refuses_a_file_that_is_not_a_backup(tmp_path, settings):
    root = tmp_path / "archives"
    root.mkdir()
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(root)
    settings.MEMORYHUB_PORTABILITY_ROOTS_DEFAULTED = False  # chosen by the operator: binds the shell too
    with pytest.raises(CommandError, match="escapes allowed roots"):
        call_command("backup", output=str(tmp_path / "outside.pgdump"))
    assert not (tmp_path / "outside.pgdump").exists()

    junk = root / "junk.pgdump"
    junk.write_text("not a backup")
    with pytest.raises(CommandError, match="reading junk.pgdump as a backup failed"):
        call_command("restore", str(junk), interactive=False)
