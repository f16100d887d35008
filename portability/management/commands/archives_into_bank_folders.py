"""Move archives left flat in a portability root, from before the per-bank folders, into the folder of
the bank they belong to (``banks/<tenant>/<bank id>/``), where that bank's admins reach them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from banks.models import Bank
from portability.formats.compression import open_archive_bytes
from portability.paths import BANKS_DIR, Location, PathNotAllowed, bank_parts, list_entries, move_to
from portability.roots import portability_roots

LEFT_ALONE = {BANKS_DIR, "backups"}


def named_bank(where: Location) -> str | None:
    """The bank id an AMA or whole-bank archive's header names (gzip or not), or None."""
    try:
        with open_archive_bytes(where, 1 << 20) as fp:
            head = json.loads(fp.readline(1 << 20))
    except (ValueError, OSError):
        return None
    bank_id = head.get("bank_id") if isinstance(head, dict) and "_ama_version" in head else None
    return bank_id if isinstance(bank_id, str) and bank_id else None


class Command(BaseCommand):
    help = ("Move archives left flat in a portability root into the folder of the bank their header names "
            "(AMA and whole-bank archives), or one file or folder into a bank's folder with --file and --bank.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--root", action="append", help="the root to tidy (repeatable); default: every root")
        parser.add_argument("--file", help="one file or folder directly in the root, moved into --bank's folder")
        parser.add_argument("--bank", help="the bank whose folder --file goes into")
        parser.add_argument("--dry-run", action="store_true", help="say what would move, move nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        roots = [Path(r).expanduser().resolve() for r in options["root"] or []] or portability_roots()
        if not roots:
            raise CommandError("No portability root: set MEMORYHUB_PORTABILITY_ROOTS or pass --root.")
        if bool(options["file"]) != bool(options["bank"]):
            raise CommandError("--file and --bank go together.")
        try:
            if options["file"]:
                self._one(roots, options["file"], options["bank"], options["dry_run"])
            else:
                for root in roots:
                    self._tidy(Location(root), options["dry_run"])
        except PathNotAllowed as exc:
            raise CommandError(str(exc)) from None

    def _move(self, source: Location, bank_id: str, dry_run: bool) -> None:
        target = Location(source.root, (*bank_parts(bank_id), source.name))
        if not dry_run:
            move_to(source, target)
        self.stdout.write(f"{'would move' if dry_run else 'moved'} {source.shown} -> {target.shown}")

    def _one(self, roots: list[Path], name: str, bank_id: str, dry_run: bool) -> None:
        if not Bank.objects.active().filter(bank_id=bank_id).exists():
            raise CommandError(f"Bank {bank_id!r} does not exist.")
        for root in roots:
            source = Location(root, (name,))
            if source.exists():
                self._move(source, bank_id, dry_run)
                return
        raise CommandError(f"No {name!r} directly in {', '.join(str(r) for r in roots)}.")

    def _tidy(self, root: Location, dry_run: bool) -> None:
        existing = set(Bank.objects.active().values_list("bank_id", flat=True))
        for entry in list_entries(root, 100_000):
            source: Location = entry["location"]
            if entry["name"] in LEFT_ALONE:
                continue
            bank_id = None if entry["is_dir"] else named_bank(source)
            if bank_id in existing:
                try:
                    self._move(source, bank_id, dry_run)
                except PathNotAllowed as exc:
                    self.stdout.write(f"left {source.shown}: {exc}")
                continue
            why = ("a folder" if entry["is_dir"] else f"names bank {bank_id!r}, which does not exist" if bank_id
                   else "names no bank")
            self.stdout.write(f"left {source.shown}: {why} (move it with --file {entry['name']} --bank <id>)")
