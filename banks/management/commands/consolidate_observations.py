from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from banks.models import Bank
from banks.services.consolidation import observations_consolidate


class Command(BaseCommand):
    help = "Group related memories of a bank into observations now (the worker runs the same as a job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bank", required=True, help="bank id")
        parser.add_argument("--limit", type=int, default=500, help="most recent uncited memories to look at")

    def handle(self, *args: Any, **options: Any) -> None:
        bank = Bank.objects.active().filter(bank_id=options["bank"]).first()
        if bank is None:
            raise CommandError(f"Bank {options['bank']!r} does not exist.")
        outcome = observations_consolidate(bank=bank, actor="cli", limit=options["limit"])
        self.stdout.write(f"scanned {outcome.memories_scanned} memories: {outcome.clusters} groups, "
                          f"{outcome.created} observations created, {outcome.updated} strengthened")
