"""Find (and unless --dry-run, repair) stored values that break a bank's pages and recall."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import connection, transaction

from banks.models import Bank
from banks.services.memory_rows import mentions_recount
from banks.services.time_repair import out_of_range_times


class Command(BaseCommand):
    help = ("Find and repair stored times outside years 1..9999 UTC, which no page or recall can read, and "
            "entity mention counts that disagree with their mentions.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--dry-run", action="store_true", help="report what would be repaired; change nothing")

    def handle(self, *args: Any, dry_run: bool = False, **options: Any) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            findings = out_of_range_times(cursor, repair=not dry_run)
        verb = "would repair" if dry_run else "repaired"
        self._mention_counts(verb, dry_run)
        if not findings:
            self.stdout.write("All banks are readable: no stored time out of range.")
            return
        for finding in findings:
            banks = ", ".join(finding.bank_ids[:20]) + (" ..." if len(finding.bank_ids) > 20 else "")
            self.stdout.write(f"{verb} {finding.rows} × {finding.label} in bank(s) {banks}")

    def _mention_counts(self, verb: str, dry_run: bool) -> None:
        """Each bank in a transaction of its own (its entity rows are locked while counted)."""
        off: list[tuple[str, int]] = []
        for bank_pk, bank_id in Bank.objects.order_by("pk").values_list("pk", "bank_id").iterator():
            with transaction.atomic():
                wrong = mentions_recount(bank_pk, dry_run=dry_run)
            if wrong:
                off.append((bank_id, wrong))
        if not off:
            self.stdout.write("Every entity's mention count matches its mentions.")
            return
        banks = ", ".join(f"{bank_id} ({n})" for bank_id, n in off[:20]) + (" ..." if len(off) > 20 else "")
        self.stdout.write(f"{verb} {sum(n for _, n in off)} × entity mention count in bank(s) {banks}")
