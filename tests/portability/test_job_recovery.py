"""Jobs outlive their worker: a worker killed mid-import is noticed by the sweep (on its own queue and
worker) and the import resumed by itself, once; a failed job is resumed once, whoever asks."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta

import pytest
from django.utils.timezone import now as timezone_now

from banks.models import Bank, Job, Memory
from banks.services.jobs import job_create
from config.celery import app as celery_app
from config.celery import route_task
from memoryhub.errors import Conflict
from portability.jobs import job_resume
from tests.portability.fixtures import bank_folder
from tests.worker import start_worker, wait_for


def _archive(path, total: int) -> None:  # noqa: ANN001
    with path.open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "x", "memory_count": total}) + "\n")
        for i in range(total):
            fp.write(json.dumps({"id": f"m{i}", "text": f"fact {i} about topic {i % 97} and value {i * 7919 % 10007}"})
                     + "\n")


@pytest.fixture
def fast_sweep_env(monkeypatch, settings, tmp_path):
    """Read by the worker processes from their environment (and by this process for its own calls)."""
    for name, value in {"MEMORYHUB_JOB_PULSE_SECONDS": "1", "MEMORYHUB_JOB_STALE_SECONDS": "10",
                        "MEMORYHUB_JOB_SWEEP_SECONDS": "2"}.items():
        monkeypatch.setenv(name, value)
    settings.MEMORYHUB_JOB_STALE_SECONDS = 10
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    return tmp_path


@pytest.mark.worker
def test_an_import_whose_worker_is_killed_resumes_by_itself_exactly_once(fast_sweep_env, transactional_db,
                                                                         make_bank, make_token, tmp_path):
    from tests.conftest import ApiClient

    broker = os.environ.get("MEMORYHUB_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
    main = start_worker(tmp_path, broker, name="main")
    queue = main.queue
    # The sweep's own worker, with the beat that sends it: the only thing that notices the dead job.
    sweeper = start_worker(tmp_path, broker, queue=queue, queues=[f"{queue}-sweep"], beat=True, name="sweeper")
    conf = celery_app.conf
    saved = (conf.task_always_eager, conf.task_default_queue, conf.broker_url)
    conf.task_always_eager, conf.task_default_queue, conf.broker_url = False, queue, broker
    restarted = None
    try:
        make_bank("user-alice")
        client = ApiClient(make_token())
        total = 20_000
        _archive(bank_folder(tmp_path, "user-alice") / "big.jsonl", total)
        first_id = client.post("/v1/import", {"bank_id": "user-alice", "path": str(tmp_path / "big.jsonl"),
                                              "async": True}).json()["job_id"]
        wait_for(lambda: Job.objects.filter(pk=first_id, progress_done__gte=500).exists(), timeout=300,
                 interval=0.05)
        main.kill()  # SIGKILL mid-import: no cleanup, the row still says running
        first = Job.objects.get(pk=first_id)
        assert first.state == "running" and first.progress_done < total
        # What the supervisor does for a dead worker: start another. No one resumes anything by hand.
        restarted = start_worker(tmp_path, broker, queue=queue, queues=[queue], name="restarted")

        def resumed() -> Job | None:
            job = Job.objects.filter(pk=first_id).first()
            return Job.objects.filter(pk=job.resumed_by).first() if job and job.resumed_by else None

        second = wait_for(resumed, timeout=120)
        second = wait_for(lambda: Job.objects.filter(pk=second.pk, state__in=Job.FINISHED).first(), timeout=600)
        assert second.state == "succeeded", second.message
        first.refresh_from_db()
        assert first.state == "failed" and "Resume" in first.message
        assert second.params["resume_of"] == first_id and second.params["auto_resumes"] == 1
        assert second.params["skip_records"] > 0
        bank = Bank.objects.get(bank_id="user-alice")
        # Exactly once: every line stored, none twice, one continuation.
        assert Memory.objects.filter(bank=bank).count() == total
        assert Memory.objects.filter(bank=bank).values("memory_id").distinct().count() == total
        assert Job.objects.filter(kind="import", bank=bank).count() == 2
        # An operator's late resume of the same failed job is refused, naming the one that ran.
        again = client.post(f"/v1/jobs/{first_id}/resume", {"bank_id": "user-alice"})
        assert again.status_code == 409 and again.json()["job_id"] == second.pk
    finally:
        conf.task_always_eager, conf.task_default_queue, conf.broker_url = saved
        for worker in (main, sweeper, restarted):
            if worker is not None and worker.process.poll() is None:
                worker.process.terminate()
                try:
                    worker.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    worker.process.kill()


@pytest.mark.django_db
def test_a_failed_job_is_resumed_once(make_bank, django_capture_on_commit_callbacks, tmp_path, settings):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    _archive(bank_folder(tmp_path, "user-alice") / "a.jsonl", 10)
    bank = make_bank("user-alice")
    failed = job_create(kind="import", actor="t", bank=bank, params={"path": "a.jsonl"})
    Job.objects.filter(pk=failed.pk).update(state="failed", progress_done=4)
    failed.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        resumed = job_resume(job=failed, actor="t")
    with pytest.raises(Conflict) as refused:
        job_resume(job=Job.objects.get(pk=failed.pk), actor="t")
    assert refused.value.extra["job_id"] == resumed.pk
    assert Job.objects.filter(kind="import").count() == 2


def test_the_sweep_has_a_queue_of_its_own():
    queue = celery_app.conf.task_default_queue
    assert route_task("portability.sweep_jobs", (), {}, {}) == {"queue": f"{queue}-sweep"}
    assert route_task("portability.run_job", (), {}, {}) is None


@pytest.mark.django_db(transaction=True)
def test_the_sweep_builds_no_index_and_leaves_a_killed_imports_to_its_resume(make_bank):
    from django.utils import timezone

    from portability.services.job_health import jobs_sweep

    bank = make_bank("user-alice")
    # Moved onto its own vector index by a big import that was killed before building it.
    Bank.objects.filter(pk=bank.pk).update(own_vector_index=True)
    long_ago = timezone.now() - timedelta(hours=1)
    dead = job_create(kind="import", actor="t", bank=bank, params={"path": "big.jsonl"})
    Job.objects.filter(pk=dead.pk).update(state="running", started_at=long_ago, heartbeat_at=long_ago)
    swept = jobs_sweep()
    assert swept["dead"] == 1
    # The import's resume fills and builds; the sweep queues nothing that would race it, and builds nothing.
    assert swept["vector_index_jobs"] == 0
    assert not Job.objects.filter(kind="vector_index").exists()
    # Once nothing will build it (no import to resume), a job of its own is queued, not work in the sweep.
    Job.objects.filter(pk=dead.pk).update(state="succeeded")
    assert jobs_sweep()["vector_index_jobs"] == 1
    assert Job.objects.filter(kind="vector_index", bank=bank).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_failed_index_completion_is_not_queued_again_every_sweep(make_bank):
    from portability.services.job_health import jobs_sweep

    bank = make_bank("user-alice")
    Bank.objects.filter(pk=bank.pk).update(own_vector_index=True)
    failed = job_create(kind="vector_index", actor="system:sweep", bank=bank)
    Job.objects.filter(pk=failed.pk).update(state="failed", finished_at=timezone_now(), message="boom")
    assert jobs_sweep()["vector_index_jobs"] == 0
    Job.objects.filter(pk=failed.pk).update(finished_at=timezone_now() - timedelta(hours=2))
    assert jobs_sweep()["vector_index_jobs"] == 1
