from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from memoryhub.backup import BackupError, restore_database
from portability.management.commands._cli import cli_path
from portability.paths import PathNotAllowed


class Command(BaseCommand):
    help = ("Restore a backup made by `manage.py backup`: every table is replaced, in one transaction. "
            "Stop the web server and workers first.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the .pgdump file (inside a portability root when roots are set)")
        parser.add_argument("--no-input", "--noinput", action="store_false", dest="interactive",
                            help="do not ask for confirmation")

    def handle(self, *args: Any, **options: Any) -> None:
        source = cli_path(options["path"], None)
        if not source.is_file():
            raise CommandError(f"{source.path} is not a file")
        database = connection.settings_dict["NAME"]
        if options["interactive"]:
            answer = input(f"This replaces everything in database {database!r} with {source.path}. Type 'yes' to go on: ")
            if answer.strip().lower() != "yes":
                raise CommandError("Restore cancelled.")
        connection.close()
        try:
            restore_database(lambda: source.open("rb"), source.name, connection.settings_dict)
        except (BackupError, PathNotAllowed) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(
            f"Restored {source.path} into database {database!r}. Run `manage.py migrate` if the backup is from an "
            "older version (`make run` does it at start)."))
