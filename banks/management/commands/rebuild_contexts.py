from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from banks.models import Bank
from banks.services.context_rebuild import JOB_KIND, contexts_rebuild_bank
from banks.services.jobs import JobOutcome, job_create, job_execute
from banks.turn_context import context_turns


class Command(BaseCommand):
    help = ("Recompute the conversation sessions and contexts (and their vectors) of one bank or every bank, "
            "in batches: for rows stored before contexts existed. Each bank is a job whose progress the "
            "jobs page and /v1/jobs show; it runs here, not on the worker.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bank", help="bank id (default: every bank)")

    def handle(self, *args: Any, **options: Any) -> None:
        banks = Bank.objects.active().order_by("bank_id")
        if options["bank"]:
            banks = banks.filter(bank_id=options["bank"])
            if not banks.exists():
                raise CommandError(f"Bank {options['bank']!r} does not exist.")
        for bank in banks:
            job = job_create(kind=JOB_KIND, actor="cli", bank=bank, params={"context_turns": context_turns(bank.config)})

            def work(job: Any, bank: Bank) -> JobOutcome:
                counts = contexts_rebuild_bank(bank=bank, job=job)
                return counts, dict(counts)

            job_execute(job.pk, work)
            job.refresh_from_db()
            self.stdout.write(f"{bank.bank_id}: job {job.pk} {job.state}, {job.counts.get('rows', 0)} rows, "
                              f"{job.counts.get('contexts_written', 0)} contexts changed")
