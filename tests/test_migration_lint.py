"""Every migration newer than the linter's baseline (pyproject.toml) is safe on a big table: the suite
runs the same check as ``make lint``, so an unsafe migration fails CI even where nobody ran the lint."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.django_db(transaction=True)  # sqlmigrate of a CONCURRENTLY operation refuses a transaction
def test_new_migrations_pass_the_migration_linter(monkeypatch, capsys):
    monkeypatch.chdir(REPO)  # the linter reads its configuration from ./pyproject.toml
    try:
        call_command("lintmigrations")
    except SystemExit as exit_:
        pytest.fail(f"the migration linter refused a migration (docs/operations.md):\n{capsys.readouterr().out}"
                    if exit_.code else "")
    assert "Erroneous migrations: 0/" in capsys.readouterr().out
