"""A job that ends between two beats of its pulse still says how far it got: its end writes the progress
it noted (an export of 3,000 memories finished as "0 done" when the pulse had not beaten yet)."""

from __future__ import annotations

import pytest

from banks.models import Job, JobState
from banks.services.memories import memory_retain
from portability.jobs import job_run
from tests.portability.fixtures import bank_folder


@pytest.mark.django_db(transaction=True)  # outside a transaction, as on the worker: the job gets its pulse
def test_a_quick_export_ends_with_its_progress_written(make_bank, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    settings.MEMORYHUB_JOB_PULSE_SECONDS = 600  # no beat while it runs: only its end can write progress
    bank = make_bank("user-quick")
    for i in range(25):
        memory_retain(bank=bank, text=f"Order {i} shipped to depot {i * 3}.", actor="t", near_dedup=False,
                      extract_entities=False)
    dest = bank_folder(tmp_path, bank.bank_id) / "quick.ama.jsonl"
    job = Job.objects.create(kind="export", bank=bank, state=JobState.QUEUED, created_by="t",
                             params={"path": str(dest), "format": "ama"})
    job_run(job)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.result["exported_count"] == 25
    assert (job.progress_done, job.progress_total) == (25, 25)
