from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from memoryhub.backup import BackupError, backup_database, default_backup_name
from portability.management.commands._cli import cli_path
from portability.paths import Location, PathNotAllowed, atomic_write
from portability.roots import portability_roots


class Command(BaseCommand):
    help = ("Back up the whole database (pg_dump, custom format) into a portability root. Safe while "
            "MemoryHub runs: the dump is one consistent snapshot.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", help="file to write; default: backups/memoryhub-<UTC time>.pgdump "
                                             "in the first portability root")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["output"]:
            destination = cli_path(options["output"], None, write=True)
        else:
            roots = portability_roots()
            if not roots:
                raise CommandError("No portability root to write into: set MEMORYHUB_PORTABILITY_ROOTS or pass --output.")
            destination = Location(roots[0], ("backups", default_backup_name()))
        try:
            # Owner-only (0600), under a temporary name until pg_dump is done; an existing file is kept.
            with atomic_write(destination, "wb", replace=False) as out:
                database = backup_database(out, connection.settings_dict)
            size = destination.stat().st_size
        except (BackupError, PathNotAllowed) as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"{destination.shown}: {exc.strerror or exc.__class__.__name__}") from None
        self.stdout.write(self.style.SUCCESS(
            f"Backed up database {database!r} to {destination.path} ({size:,} bytes)."))
