from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from banks.models import Bank
from memoryhub.errors import MemoryHubError
from portability.formats.ama import AmaHeaderError
from portability.formats.registry import (
    READERS,
    WHOLE_BANK,
    UnknownFormat,
    max_decompressed_bytes,
    open_archive,
)
from portability.management.commands._cli import ProgressBar, cli_bank, cli_path
from portability.paths import Location, PathNotAllowed
from portability.services import archive_import
from portability.services.bank_archive import bank_archive_import, is_bank_archive


class Command(BaseCommand):
    help = "Import an archive into a bank (AMA by default; the format is detected unless given)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bank", required=True)
        parser.add_argument("--input", required=True)
        parser.add_argument("--on-conflict", choices=["skip", "overwrite", "error"], default="skip")
        # mhba: a whole-bank archive (detected like every other format when --format is left out).
        parser.add_argument("--format", choices=sorted([*READERS, WHOLE_BANK]), default=None)
        parser.add_argument("--dry-run", action="store_true", help="report what would happen, write nothing")
        parser.add_argument("--strict", action="store_true", help="write nothing if any line is bad")
        # Importing creates a missing bank, as Astrocyte's import does; the flag is kept for old scripts.
        parser.add_argument("--create-bank", action="store_true", help="(default) create the bank if missing")
        parser.add_argument("--root", action="append", help="allowed root for this call (repeatable)")

    def handle(self, *args: Any, **options: Any) -> None:
        source = cli_path(options["input"], options["root"])
        try:
            if not source.exists():
                raise CommandError(f"No archive at {source.path}.")
            whole_bank = is_bank_archive(source, options["format"])
        except (PathNotAllowed, OSError) as exc:
            raise CommandError(str(exc) if isinstance(exc, PathNotAllowed) else f"{source.path}: {exc.strerror}") from None
        if whole_bank:
            self._restore(source, options)
            return
        try:
            fmt, header, records = open_archive(source, options["format"])
        except (AmaHeaderError, UnknownFormat, UnicodeError, ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        # Only a file that opened as an archive creates the bank; a dry run never does.
        bank = cli_bank(options["bank"], create=not options["dry_run"], empty_if_missing=options["dry_run"])
        report = self._run(bank, fmt, header, records, source.name, options)
        counts = report.counts()
        prefix = "would import" if report.dry_run else "imported"
        self.stdout.write(f"{prefix} {counts['imported']} new, {counts['overwritten']} overwritten; "
                          + ", ".join(f"{name} {value}" for name, value in counts.items()
                                      if name not in ("imported", "overwritten")) + f" ({fmt})")
        for error in report.errors[:50]:
            self.stdout.write(f"  line {error['line']}: {error['reason']}")
        if len(report.errors) > 50:
            self.stdout.write(f"  ... and {len(report.errors) - 50} more")
        if report.aborted:
            raise CommandError(report.aborted)
        failed = report.invalid + (report.conflicts if report.on_conflict == "error" else 0)
        if failed:
            raise CommandError(f"{failed} line(s) were not imported (see above)")

    def _restore(self, source: Location, options: dict[str, Any]) -> None:
        # All or nothing by construction (--strict holds); --dry-run restores every row and rolls back.
        dry_run = options["dry_run"]
        bank = cli_bank(options["bank"], create=not dry_run, empty_if_missing=dry_run)
        try:
            counts = bank_archive_import(bank=bank, path=source, actor="cli", max_bytes=max_decompressed_bytes(),
                                         dry_run=dry_run)
        except (MemoryHubError, ValueError, OSError) as exc:
            raise CommandError(getattr(exc, "message", None) or str(exc)) from None
        self.stdout.write(f"{'would restore' if dry_run else 'restored'} the whole bank into {bank.bank_id}: "
                          + ", ".join(f"{kind} {n}" for kind, n in counts.items()))

    def _run(self, bank: Bank, fmt: str, header: Any, records: Any, name: str, options: dict[str, Any]) -> Any:
        bar = ProgressBar(self.stderr._out, "importing")
        total = header.memory_count if isinstance(header.memory_count, int) else None
        try:
            return archive_import(bank=bank, records=records, actor="cli", on_conflict=options["on_conflict"],
                                  dry_run=options["dry_run"], strict=options["strict"],
                                  source_label=f"import:{fmt}:{header.provider or name}",
                                  progress=lambda r: bar.update(r.lines, total), expected=total)
        except (UnicodeError, ValueError, OSError) as exc:
            # A file that is not what --format says (gzip, binary) fails while being read.
            raise CommandError(f"could not read {name} as {fmt}: {exc}") from None
        finally:
            bar.close()
