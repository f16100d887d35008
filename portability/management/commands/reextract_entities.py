from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from banks.models import Job
from banks.services.entity_reextract import DEFAULT_BATCH
from memoryhub.errors import MemoryHubError
from portability.jobs import entities_reextract_start, job_resume
from portability.management.commands._cli import ProgressBar, cli_bank


class Command(BaseCommand):
    help = ("Re-extract the entities of every memory of a bank with its current provider. Queues the same "
            "job as the API and the transfer page (a worker runs it); --wait follows it to the end.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bank", required=True)
        parser.add_argument("--batch", type=int, default=DEFAULT_BATCH, help="memories per transaction")
        parser.add_argument("--resume", type=int, metavar="JOB_ID",
                            help="continue a failed or dead re-extraction after its last committed batch")
        parser.add_argument("--wait", action="store_true", help="follow the job until it finishes")

    def handle(self, *args: Any, **options: Any) -> None:
        bank = cli_bank(options["bank"])
        try:
            if options["resume"]:
                previous = Job.objects.filter(pk=options["resume"], bank=bank, kind="reextract_entities").first()
                if previous is None:
                    raise CommandError(f"No re-extraction job {options['resume']} in bank {bank.bank_id}.")
                job = job_resume(job=previous, actor="cli")
            else:
                job = entities_reextract_start(bank=bank, actor="cli", batch=options["batch"])
        except MemoryHubError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"queued re-extraction job {job.pk} for bank {bank.bank_id}")
        if options["wait"]:
            self._follow(job)

    def _follow(self, job: Job) -> None:
        bar = ProgressBar(self.stderr._out, "re-extracting")
        while not job.is_finished:
            time.sleep(1)
            job.refresh_from_db()
            bar.update(job.progress_done, job.progress_total)
        bar.close()
        counts = ", ".join(f"{k} {v}" for k, v in job.counts.items())
        if job.state != Job.State.SUCCEEDED:
            raise CommandError(f"job {job.pk} {job.state}: {job.message} ({counts})")
        self.stdout.write(f"job {job.pk} succeeded: {counts}")
