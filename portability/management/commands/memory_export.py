from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from banks.models import Bank
from portability.management.commands._cli import ProgressBar, cli_bank, cli_path
from portability.paths import Location, PathNotAllowed
from portability.services import archive_export
from portability.services.bank_archive import bank_archive_export
from portability.services.exporter import WRITERS, archive_export_as


class Command(BaseCommand):
    help = "Export a bank to an AMA archive (atomically: the file appears only when complete)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bank", required=True)
        parser.add_argument("--output", required=True, help="archive path (.ama.jsonl)")
        parser.add_argument("--include-embeddings", action="store_true")
        parser.add_argument("--no-entities", action="store_true", help="leave entities and links out")
        parser.add_argument("--no-observations", action="store_true")
        parser.add_argument("--root", action="append", help="allowed root for this call (repeatable)")
        parser.add_argument("--full", action="store_true",
                            help="the whole bank (.mhba.jsonl): memories as AMA lines plus models, directives, "
                                 "observations, links, holds and settings")
        parser.add_argument("--format", choices=WRITERS, default="ama",
                            help="ama (default), csv, markdown (a directory), amplihack or agentos_json")

    def handle(self, *args: Any, **options: Any) -> None:
        bank = cli_bank(options["bank"])
        dest = cli_path(options["output"], options["root"], write=True)
        try:
            self._export(bank, dest, options)
        except PathNotAllowed as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"could not write {dest.path}: {exc.strerror or exc.__class__.__name__}") from None

    def _export(self, bank: Bank, dest: Location, options: dict[str, Any]) -> None:
        if dest.is_dir() and options["format"] != "markdown":
            raise CommandError(f"{dest.path} is a directory; give a file name inside it")
        if options["full"]:
            counts = bank_archive_export(bank=bank, dest=dest, actor="cli")
            self.stdout.write(f"exported the whole bank to {dest.path}: "
                              + ", ".join(f"{kind} {n}" for kind, n in counts.items()))
            return
        if options["format"] != "ama":
            report = archive_export_as(bank=bank, dest=dest, fmt=options["format"], actor="cli")
            self.stdout.write(f"exported {report.exported_count} as {options['format']} to {report.path}")
            return
        bar = ProgressBar(self.stderr._out, "exporting")
        try:
            report = archive_export(bank=bank, dest=dest, actor="cli",
                                    include_embeddings=options["include_embeddings"],
                                    include_entities=not options["no_entities"],
                                    include_observations=not options["no_observations"], progress=bar.update)
        finally:
            bar.close()
        self.stdout.write(f"exported {report.exported_count} ({report.memories} memories, "
                          f"{report.observations} observations) to {report.path}")
