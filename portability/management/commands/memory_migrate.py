from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from portability.formats.registry import open_archive
from portability.management.commands._cli import cli_bank, cli_path
from portability.paths import Location, PathNotAllowed, as_location, bank_parts, opened_dir
from portability.roots import portability_roots
from portability.services import archive_export, archive_import


class Command(BaseCommand):
    help = ("Move memories in one step: from a bank (or an archive file) into another bank, "
            "through an AMA archive that keeps ids, types, entities and (optionally) embeddings.")

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--from-bank")
        source.add_argument("--from-archive")
        parser.add_argument("--to-bank", required=True)
        parser.add_argument("--on-conflict", choices=["skip", "overwrite", "error"], default="skip")
        parser.add_argument("--include-embeddings", action="store_true",
                            help="carry embeddings (reused only if the target bank embeds with the same model)")
        parser.add_argument("--root", action="append")

    def handle(self, *args: Any, **options: Any) -> None:
        target = cli_bank(options["to_bank"], create=True)
        with self._scratch(options) as scratch:
            if options["from_bank"]:
                source_bank = cli_bank(options["from_bank"])
                if source_bank.pk == target.pk:
                    raise CommandError("The source and target bank are the same.")
                archive, fmt_hint = scratch(source_bank.bank_id), "ama"
                exported = archive_export(bank=source_bank, dest=archive, actor="cli",
                                          include_embeddings=options["include_embeddings"])
                self.stdout.write(f"exported {exported.exported_count} from {source_bank.bank_id}")
            else:
                archive, fmt_hint = cli_path(options["from_archive"], options["root"]), None
            try:
                fmt, header, records = open_archive(archive, fmt_hint)
            except (PathNotAllowed, ValueError) as exc:
                raise CommandError(str(exc)) from None
            report = archive_import(bank=target, records=records, actor="cli", on_conflict=options["on_conflict"],
                                    source_label=f"migrate:{header.bank_id or archive.name}",
                                    expected=header.memory_count if isinstance(header.memory_count, int) else None)
        counts = report.counts()
        self.stdout.write(f"imported {counts['imported']} into {target.bank_id} (skipped {counts['skipped']}, "
                          f"duplicates {counts['duplicates']}, invalid {counts['invalid']})")

    @contextmanager
    def _scratch(self, options: dict[str, Any]) -> Iterator[Callable[[str], Location]]:
        """Where the intermediate archive goes: inside the source bank's own folder in the first root
        (removed afterwards), or a private temporary folder when no root is configured."""
        roots = portability_roots()
        made: list[Location] = []
        # A dot-name ending in .tmp: a migration killed half-way leaves a file the periodic check removes.
        name = f".migrate-{secrets.token_hex(6)}.ama.jsonl.tmp"
        if roots:
            def place(bank_id: str) -> Location:
                made.append(Location(roots[0], bank_parts(bank_id)) / name)
                return made[-1]

            try:
                yield place
            finally:
                for where in made:
                    with opened_dir(where.parent) as held, suppress(FileNotFoundError):
                        os.unlink(where.name, dir_fd=held)
            return
        with tempfile.TemporaryDirectory(prefix="memoryhub-migrate-") as folder:
            yield lambda _bank_id: as_location(Path(folder) / name)
