"""Find (and unless --dry-run, repair) stored values that break a bank's pages and recall."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import connection, transaction

from banks.services.time_repair import out_of_range_times


class Command(BaseCommand):
    help = "Find and repair stored times outside years 1..9999 UTC, which no page or recall can read."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--dry-run", action="store_true", help="report what would be repaired; change nothing")

    def handle(self, *args: Any, dry_run: bool = False, **options: Any) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            findings = out_of_range_times(cursor, repair=not dry_run)
        if not findings:
            self.stdout.write("All banks are readable: no stored time out of range.")
            return
        verb = "would repair" if dry_run else "repaired"
        for finding in findings:
            banks = ", ".join(finding.bank_ids[:20]) + (" ..." if len(finding.bank_ids) > 20 else "")
            self.stdout.write(f"{verb} {finding.rows} × {finding.label} in bank(s) {banks}")
