"""Re-extracting a bank's entities: the service in batches, resumable from its checkpoint; the same job from
the API on a real worker, from the transfer page (with a confirmation) and from the command."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import call_command
from django.test import Client

from banks.models import Entity, Job, Memory, MemoryEntity
from banks.services.entities import attach_entities
from banks.services.entity_reextract import entities_reextract
from memoryhub.errors import Conflict
from portability.formats.ama import parse_line
from portability.services import archive_import
from tests.worker import wait_for

B = {"bank_id": "user-alice"}
TEXTS = [f"Report {i}: Alice Smith met Bob Jones in Lisbon about the Orion Project." for i in range(30)]


def _bank_without_entities(bank) -> list[Memory]:
    """Memories imported without extraction, one of them with a stale mention to be replaced."""
    records = [parse_line(f'{{"id": "m{i}", "text": "{text}"}}', i + 2, 10**6) for i, text in enumerate(TEXTS)]
    archive_import(bank=bank, records=lambda: iter(records), actor="test", extract_entities=False)
    memories = list(Memory.objects.filter(bank=bank).order_by("pk"))
    attach_entities(memories[0], [{"name": "Stale Name"}])
    return memories


def _mentions(bank) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for memory_id, name in MemoryEntity.objects.filter(memory__bank=bank).values_list("memory__memory_id",
                                                                                     "entity__name"):
        found.setdefault(memory_id, set()).add(name)
    return found


@pytest.mark.django_db
def test_service_replaces_mentions_in_batches_and_keeps_counts_true(bank):
    _bank_without_entities(bank)
    checkpoints: list[int] = []
    beats: list[int] = []
    report = entities_reextract(bank=bank, batch=7, checkpoint=lambda r: checkpoints.append(r.after_pk),
                                alive=lambda: beats.append(1))
    assert report.memories == 30 and len(checkpoints) == 5 and checkpoints == sorted(checkpoints)
    assert len(beats) == 30  # a sign of life after every provider answer, not only between batches
    mentions = _mentions(bank)
    assert len(mentions) == 30 and all({"Alice Smith", "Bob Jones"} <= names for names in mentions.values())
    assert "Stale Name" not in mentions["m0"] and report.mentions_removed == 1
    for entity in Entity.objects.filter(bank=bank):
        assert entity.mention_count == MemoryEntity.objects.filter(entity=entity).count(), entity.name
    assert Entity.objects.get(bank=bank, entity_id="stale name").mention_count == 0


def _deadlock() -> Exception:
    import psycopg
    from django.db import OperationalError

    try:
        raise OperationalError("deadlock detected") from psycopg.errors.DeadlockDetected("deadlock detected")
    except OperationalError as exc:
        return exc


@pytest.mark.django_db
def test_a_batch_that_loses_a_deadlock_is_written_once_more(bank, monkeypatch):
    from banks.services import entity_reextract

    _bank_without_entities(bank)
    real = entity_reextract.mentions_link_pairs
    losses = iter([True])

    def link_losing_once(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        # Inside the batch's transaction, after its old mentions went: the whole batch rolls back.
        if next(losses, False):
            raise _deadlock()
        return real(*args, **kwargs)

    monkeypatch.setattr(entity_reextract, "mentions_link_pairs", link_losing_once)
    checkpoints: list[int] = []
    report = entities_reextract(bank=bank, batch=7, checkpoint=lambda r: checkpoints.append(r.after_pk))
    # The lost attempt counts nowhere: the report is the one of a run that never lost.
    assert (report.memories, report.mentions_removed) == (30, 1)
    assert len(checkpoints) == 5 and checkpoints == sorted(set(checkpoints))
    assert len(_mentions(bank)) == 30
    for entity in Entity.objects.filter(bank=bank):
        assert entity.mention_count == MemoryEntity.objects.filter(entity=entity).count(), entity.name


@pytest.mark.django_db
def test_a_batch_that_loses_twice_is_a_conflict_to_retry(bank, monkeypatch):
    from banks.services import entity_reextract

    memories = _bank_without_entities(bank)

    def always_losing(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise _deadlock()

    monkeypatch.setattr(entity_reextract, "mentions_link_pairs", always_losing)
    with pytest.raises(Conflict, match="retry") as refused:
        entities_reextract(bank=bank, batch=7)
    assert refused.value.status == 409
    assert _mentions(bank) == {"m0": {"Stale Name"}} and memories


@pytest.mark.django_db
def test_service_resumes_after_its_checkpoint(bank):
    memories = _bank_without_entities(bank)
    middle = memories[14].pk
    report = entities_reextract(bank=bank, after_pk=middle, batch=5)
    assert report.memories == 30  # the first fifteen count as done already
    mentions = _mentions(bank)
    assert set(mentions) == {"m0"} | {f"m{i}" for i in range(15, 30)} and mentions["m0"] == {"Stale Name"}


@pytest.mark.django_db
def test_api_refuses_a_second_run_and_bad_batches(bank, make_token):
    from tests.conftest import ApiClient

    client = ApiClient(make_token())
    first = client.post("/v1/banks/user-alice/reextract-entities", {"batch": 50})
    assert first.status_code == 202 and first.json()["kind"] == "reextract_entities"
    again = client.post("/v1/banks/user-alice/reextract-entities", {})
    assert again.status_code == 409 and f"job {first.json()['job_id']}" in again.json()["detail"]
    assert client.post("/v1/banks/user-alice/reextract-entities", {"batch": 0}).status_code in (400, 422)
    assert client.post("/v1/banks/nobody-here/reextract-entities", {}).status_code in (403, 404)


@pytest.mark.django_db
def test_transfer_page_needs_the_confirmation(bank, django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    page = client.get("/banks/user-alice/transfer/").content.decode()
    assert "Re-extract entities" in page and "data-confirm=" in page
    refused = client.post("/banks/user-alice/transfer/start", {"kind": "reextract_entities"}, follow=True)
    assert "Confirm the re-extraction first." in refused.content.decode() and not Job.objects.exists()
    started = client.post("/banks/user-alice/transfer/start", {"kind": "reextract_entities", "confirm": "yes"})
    job = Job.objects.get(kind="reextract_entities")
    assert started.status_code == 302 and started["Location"].endswith(f"/jobs/{job.pk}/")


@pytest.mark.django_db
def test_command_queues_the_same_job(bank, capsys):
    call_command("reextract_entities", "--bank", "user-alice", "--batch", "25")
    job = Job.objects.get(kind="reextract_entities")
    assert job.params == {"batch": 25} and f"queued re-extraction job {job.pk}" in capsys.readouterr().out


@pytest.mark.worker
def test_runs_on_the_worker_with_progress_then_resumes(celery_worker, make_bank, make_token, django_user_model):
    from tests.conftest import ApiClient

    bank = make_bank("user-alice")
    memories = _bank_without_entities(bank)
    client = ApiClient(make_token())
    started = client.post("/v1/banks/user-alice/reextract-entities", {"batch": 4})
    assert started.status_code == 202
    done = wait_for(lambda: Job.objects.filter(pk=started.json()["job_id"], state__in=Job.FINISHED).first())
    assert done.state == "succeeded", done.message
    assert (done.progress_done, done.progress_total, done.counts["memories"]) == (30, 30, 30)
    assert done.heartbeat_at is not None and done.result["after_pk"] == memories[-1].pk
    assert all({"Alice Smith", "Bob Jones"} <= names for names in _mentions(bank).values())
    # A run that died after committing half: the operator resumes it from the job page.
    MemoryEntity.objects.filter(memory__bank=bank).delete()
    dead = Job.objects.create(kind="reextract_entities", bank=bank, created_by="test", state="failed",
                              params={"batch": 4}, result={"after_pk": memories[19].pk, "resumable": True})
    operator = Client()
    operator.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    assert "Resume after the last committed batch" in operator.get(
        f"/banks/user-alice/jobs/{dead.pk}/").content.decode()
    resumed = operator.post(f"/banks/user-alice/jobs/{dead.pk}/resume")
    follow = Job.objects.exclude(pk__in=[done.pk, dead.pk]).get()
    assert resumed["Location"].endswith(f"/jobs/{follow.pk}/") and follow.params["after_pk"] == memories[19].pk
    finished = wait_for(lambda: Job.objects.filter(pk=follow.pk, state__in=Job.FINISHED).first())
    assert finished.state == "succeeded", finished.message
    assert set(_mentions(bank)) == {f"m{i}" for i in range(20, 30)}


@pytest.mark.worker
def test_a_killed_reextraction_resumes_after_its_last_committed_batch(tmp_path, celery_worker, make_bank,
                                                                      make_token):
    from datetime import timedelta

    from django.utils import timezone

    from config.celery import app
    from portability.services.job_health import jobs_mark_dead
    from tests.conftest import ApiClient
    from tests.portability.test_api import app_broker
    from tests.worker import start_worker

    bank = make_bank("user-alice")
    total = 3000
    records = [parse_line(f'{{"id": "k{i}", "text": "Note {i}: Alice Smith and Bob Jones met in Lisbon."}}', i + 2,
                          10**6) for i in range(total)]
    archive_import(bank=bank, records=lambda: iter(records), actor="test", extract_entities=False,
                   batch_size=1000)
    client = ApiClient(make_token())
    job_id = client.post("/v1/banks/user-alice/reextract-entities", {"batch": 10}).json()["job_id"]
    wait_for(lambda: Job.objects.filter(pk=job_id, progress_done__gte=300).exists(), timeout=180, interval=0.02)
    celery_worker.kill()
    job = Job.objects.get(pk=job_id)
    assert job.state == "running", "the job ended before it could be killed"
    checkpoint = job.result["after_pk"]
    done = set(MemoryEntity.objects.filter(memory__bank=bank).values_list("memory_id", flat=True))
    # Exactly the batches that committed have their mentions, and the checkpoint names the last of them.
    assert done == set(Memory.objects.filter(bank=bank, pk__lte=checkpoint).values_list("pk", flat=True))
    Job.objects.filter(pk=job_id).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert jobs_mark_dead()["dead"] == 1
    second = start_worker(tmp_path, app_broker())
    app.conf.task_default_queue = second.queue
    try:
        resumed = client.post(f"/v1/jobs/{job_id}/resume", B)
        assert resumed.status_code == 202
        finished = wait_for(lambda: Job.objects.filter(pk=resumed.json()["job_id"], state__in=Job.FINISHED).first(),
                            timeout=300)
        assert finished.state == "succeeded", finished.message
        assert finished.params["after_pk"] == checkpoint and finished.progress_done == total
    finally:
        second.process.terminate()
        second.process.wait(timeout=30)
    assert MemoryEntity.objects.filter(memory__bank=bank).values("memory_id").distinct().count() == total
    for entity in Entity.objects.filter(bank=bank):
        assert entity.mention_count == MemoryEntity.objects.filter(entity=entity).count(), entity.name


class _Provider(BaseHTTPRequestHandler):
    """An OpenAI-style chat endpoint on this machine that names the entities, and fails on one text
    while ``broken`` is set, like a remote provider having a bad minute."""

    broken = True

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"]
        if _Provider.broken and text.startswith("Report 17:"):
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        entities = [{"name": n, "entity_type": "PERSON"} for n in ("Alice Smith", "Bob Jones") if n in text]
        answer = json.dumps({"choices": [{"message": {"content": json.dumps({"entities": entities})}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(answer.encode())

    def log_message(self, *args) -> None:  # noqa: ANN002
        pass


@pytest.fixture
def remote_llm(settings):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    settings.MEMORYHUB_LLM = "openai:test-model"
    settings.MEMORYHUB_LLM_URL = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    _Provider.broken = True
    yield _Provider
    httpd.shutdown()


@pytest.mark.django_db
def test_a_provider_failure_fails_the_job_after_its_last_batch_and_resume_finishes(bank, remote_llm):
    from banks.providers.base import ProviderError
    from portability.jobs import entities_reextract_start, job_resume, job_run

    memories = _bank_without_entities(bank)
    job = entities_reextract_start(bank=bank, actor="test", batch=5)
    with pytest.raises(ProviderError):
        job_run(job)  # what the worker runs
    job.refresh_from_db()
    assert job.state == "failed" and "HTTP 500" in job.message
    assert job.result["after_pk"] == memories[14].pk  # batches 1-3 committed; the fourth failed on Report 17
    assert set(_mentions(bank)) == {f"m{i}" for i in range(15)}
    remote_llm.broken = False
    resumed = job_resume(job=job, actor="test")
    job_run(resumed)
    resumed.refresh_from_db()
    assert resumed.state == "succeeded" and resumed.counts["memories"] == 30
    assert set(_mentions(bank)) == {f"m{i}" for i in range(30)}
