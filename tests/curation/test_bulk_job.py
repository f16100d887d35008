"""A bulk action over a big selection runs as a job: the page hands it to the worker, the job applies it
chunk by chunk (one statement each) and records its progress."""

from __future__ import annotations

import pytest

from banks.models import Job, JobState, Memory
from banks.services import bulk, bulk_jobs
from banks.tasks import bulk_apply_job
from tests.factories import make_bank, make_memory

pytestmark = pytest.mark.django_db


def test_a_big_bulk_tag_runs_as_a_job_with_progress(admin_client, monkeypatch):
    bank = make_bank("user-alice")
    for i in range(12):
        make_memory(bank, f"Shipment {i} left the warehouse in Porto.", tags=["porto"])
    make_memory(bank, "Unrelated: the office plant needs water.")
    monkeypatch.setattr(bulk_jobs, "JOB_MIN", 10)
    monkeypatch.setattr(bulk, "CHUNK", 5)
    response = admin_client.post("/banks/user-alice/memories/bulk", {"action": "tag", "tag": "shipped",
                                                                     "scope": "all", "tags": "porto",
                                                                     "confirm": "yes"})
    job = Job.objects.get(kind="bulk")
    assert response.status_code == 302 and response["Location"].endswith(f"/jobs/{job.pk}/")
    assert job.progress_total == 12 and job.params["filters"] == {"tags": "porto"}
    assert not Memory.objects.filter(tags__contains=["shipped"]).exists()  # nothing yet: the worker does it

    bulk_apply_job(job.pk)  # what the worker runs

    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.progress_done == 12
    assert job.counts == {"touched": 12, "skipped": 0}
    assert Memory.objects.filter(tags__contains=["shipped"]).count() == 12
    assert not Memory.objects.filter(tags__contains=["shipped"], text__startswith="Unrelated").exists()


def test_a_small_bulk_action_still_answers_at_once(admin_client):
    bank = make_bank("user-alice")
    make_memory(bank, "One small fact.")
    admin_client.post("/banks/user-alice/memories/bulk", {"action": "tag", "tag": "small", "scope": "all",
                                                          "confirm": "yes"})
    assert not Job.objects.filter(kind="bulk").exists()
    assert Memory.objects.get(bank=bank).tags == ["small"]
