"""Jobs survive a dead worker: the periodic check fails them, cancel ends them, resume continues them."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from banks.models import Job, Memory, MemoryLink
from banks.services.jobs import job_cancel_request, job_create
from portability.models import PendingLink
from portability.services.job_health import export_temp_files_remove, job_resume_params, jobs_mark_dead
from tests.portability.fixtures import bank_folder
from tests.worker import start_worker, wait_for

B = {"bank_id": "user-alice"}


@pytest.mark.django_db
def test_the_check_fails_dead_and_orphan_jobs_only(bank):
    now = timezone.now()
    dead = job_create(kind="import", actor="t", bank=bank, params={"path": "x"})
    Job.objects.filter(pk=dead.pk).update(state="running", heartbeat_at=now - timedelta(hours=1))
    alive = job_create(kind="import", actor="t", bank=bank)
    Job.objects.filter(pk=alive.pk).update(state="running", heartbeat_at=now)
    orphan = job_create(kind="export", actor="t", bank=bank)
    Job.objects.filter(pk=orphan.pk).update(created_at=now - timedelta(days=1))
    waiting = job_create(kind="export", actor="t", bank=bank)
    assert jobs_mark_dead() == {"dead": 1, "orphaned": 1}
    states = dict(Job.objects.values_list("pk", "state"))
    assert (states[dead.pk], states[alive.pk], states[orphan.pk], states[waiting.pk]) == (
        "failed", "running", "failed", "queued")
    dead.refresh_from_db()
    assert dead.result["resumable"] and "Resume" in dead.message


@pytest.mark.django_db
def test_cancel_ends_a_dead_job_at_once(bank):
    job = job_create(kind="import", actor="t", bank=bank)
    Job.objects.filter(pk=job.pk).update(state="running", heartbeat_at=timezone.now() - timedelta(hours=1))
    job.refresh_from_db()
    assert job_cancel_request(job=job, actor="t").state == "cancelled"


@pytest.mark.django_db
def test_resume_continues_after_the_committed_records(bank):
    job = job_create(kind="import", actor="t", bank=bank, params={"path": "a", "on_conflict": "skip"})
    Job.objects.filter(pk=job.pk).update(state="running", progress_done=1500,
                                         heartbeat_at=timezone.now() - timedelta(hours=1))
    job.refresh_from_db()
    assert job_resume_params(job) == {"path": "a", "on_conflict": "skip", "skip_records": 1500,
                                      "resume_of": job.pk}
    job.refresh_from_db()
    assert job.state == "failed"


def test_old_export_temp_files_are_removed_and_live_ones_kept(tmp_path, settings):
    settings.MEMORYHUB_EXPORT_TEMP_GRACE_SECONDS = 60
    old_file = tmp_path / ".bank.ama.jsonl.abc.tmp"
    old_file.write_text("partial")
    old_dir = tmp_path / "sub" / ".notes.xyz.partial"
    old_dir.mkdir(parents=True)
    (old_dir / "a.md").write_text("partial")
    fresh = tmp_path / ".other.ama.jsonl.def.tmp"
    fresh.write_text("being written")
    keep = tmp_path / "bank.ama.jsonl"
    keep.write_text("done")
    past = time.time() - 3600
    for path in (old_file, old_dir):
        os.utime(path, (past, past))
    assert export_temp_files_remove([tmp_path]) == 2
    assert fresh.exists() and keep.exists() and not old_file.exists() and not old_dir.exists()


@pytest.fixture
def roots_first(settings, tmp_path):
    """Roots set before the worker starts, so the worker process has them too."""
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    return tmp_path


@pytest.mark.worker
def test_a_killed_import_is_failed_by_the_check_and_resumed_with_every_link(roots_first, tmp_path, celery_worker,
                                                                           make_bank, make_token):
    from config.celery import app
    from tests.conftest import ApiClient
    from tests.portability.test_api import app_broker

    make_bank("user-alice")
    client = ApiClient(make_token())
    total = 1200
    with (bank_folder(tmp_path, "user-alice") / "linked.ama.jsonl").open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "x", "provider": "p", "memory_count": total}) + "\n")
        for i in range(total):
            links = [{"target_id": f"m{i + 1}", "link_type": "next"}] if i + 1 < total else []
            fp.write(json.dumps({"id": f"m{i}", "text": f"linked memory {i}", "entities": [{"name": f"E{i % 7}"}],
                                 "links": links}) + "\n")
    job_id = client.post("/v1/import", {**B, "path": str(tmp_path / "linked.ama.jsonl"),
                                        "async": True}).json()["job_id"]
    wait_for(lambda: Job.objects.filter(pk=job_id, progress_done__gte=500).exists(), timeout=180, interval=0.05)
    celery_worker.kill()
    partial = Memory.objects.count()
    assert 0 < partial < total
    # Committed batches carry their links (the last one waits for its target as a pending row).
    assert MemoryLink.objects.count() == partial - 1 and PendingLink.objects.count() == 1
    # Time passes with no heartbeat: the periodic check fails the job and offers resume.
    Job.objects.filter(pk=job_id).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert jobs_mark_dead()["dead"] == 1
    assert client.get(f"/v1/jobs/{job_id}", B).json()["result"]["resumable"] is True
    second = start_worker(tmp_path, app_broker())
    app.conf.task_default_queue = second.queue
    try:
        resumed = client.post(f"/v1/jobs/{job_id}/resume", B)
        assert resumed.status_code == 202
        done = wait_for(lambda: Job.objects.filter(pk=resumed.json()["job_id"], state__in=Job.FINISHED).first(),
                        timeout=300)
        assert done.state == "succeeded", done.message
        assert done.params["skip_records"] >= partial - 500
        assert Memory.objects.count() == total
        assert MemoryLink.objects.count() == total - 1 and not PendingLink.objects.exists()
    finally:
        second.process.terminate()
        second.process.wait(timeout=30)
