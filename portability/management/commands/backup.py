from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from memoryhub.backup import BackupError, backup_database, default_backup_name
from portability.management.commands._cli import cli_path
from portability.roots import portability_roots


class Command(BaseCommand):
    help = ("Back up the whole database (pg_dump, custom format) into a portability root. Safe while "
            "MemoryHub runs: the dump is one consistent snapshot.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", help="file to write; default: backups/memoryhub-<UTC time>.pgdump "
                                             "in the first portability root")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["output"]:
            destination = cli_path(options["output"], None)
        else:
            roots = portability_roots()
            if not roots:
                raise CommandError("No portability root to write into: set MEMORYHUB_PORTABILITY_ROOTS or pass --output.")
            destination = cli_path(str(Path(roots[0]) / "backups" / default_backup_name()), None)
        if destination.exists():
            raise CommandError(f"{destination} already exists; choose another --output.")
        try:
            result = backup_database(destination, connection.settings_dict)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(
            f"Backed up database {result.database!r} to {result.path} ({result.size:,} bytes)."))
