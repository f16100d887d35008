"""Every job kind an operator starts from the transfer page finishes on a 5,000-memory bank with a real
worker, the overview shows a running job with its phase, and a cancelled job frees its worker."""

from __future__ import annotations

import json
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from banks.models import AuditEvent, Bank, Job, Memory
from banks.services.bulk_memories import MemoryRow
from banks.services.jobs import job_create, job_pulse, job_start, job_stopped_cleanly
from banks.services.memory_rows import rows_insert
from config.celery import app as celery_app
from tests.portability.fixtures import bank_folder
from tests.worker import wait_for

SIZE = 5000


def _fill(bank: Bank, n: int) -> None:
    from banks.providers import get_embedder

    embedder = get_embedder()
    now = timezone.now()
    texts = [f"memory {i} about subject {i % 53}, detail {i * 7919 % 10007}" for i in range(n)]
    rows = [MemoryRow(memory_id=f"k{i}", text=text, fact_type="world", memory_layer=None, tags=[f"t{i % 5}"],
                      metadata={"i": i}, occurred_at=None, retained_at=now, created_at=now, source="test",
                      content_hash=f"hash-{i}", embedding=vector, embedding_model=embedder.name,
                      embedding_dims=embedder.dimensions)
            for i, (text, vector) in enumerate(zip(texts, embedder.embed(texts), strict=True))]
    with transaction.atomic():
        rows_insert(bank.pk, rows, now)


@pytest.fixture
def roots(settings, tmp_path):
    """Set before the worker starts: it reads the roots from its environment."""
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    return tmp_path


@pytest.fixture
def operator_client(transactional_db: None) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser(username="op", password="pw-for-tests"))
    return client


def _start(client: Client, bank_id: str, **form: str) -> Job:
    before = Job.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    answer = client.post(f"/banks/{bank_id}/transfer/start", form)
    assert answer.status_code == 302, answer.content
    return Job.objects.filter(pk__gt=before).order_by("pk").first()  # type: ignore[return-value]


def _finished(job: Job, timeout: float = 300) -> Job:
    done = wait_for(lambda: Job.objects.filter(pk=job.pk, state__in=Job.FINISHED).first(), timeout=timeout)
    assert done.state == "succeeded", f"{done.kind}: {done.state} {done.message}"
    return done


@pytest.mark.worker
def test_every_job_kind_finishes_on_a_5000_memory_bank(roots, celery_worker, operator_client, make_bank, tmp_path):
    bank = make_bank("user-alice")
    _fill(bank, SIZE)
    client = operator_client

    # Export to the server: 5,000 lines stream by COPY while progress is noted (it hung at 2,000).
    export = _finished(_start(client, "user-alice", kind="export", format="ama", name="all.ama.jsonl"))
    assert export.result["exported_count"] == SIZE
    lines = (bank_folder(tmp_path, "user-alice") / "all.ama.jsonl").read_text().splitlines()
    assert len(lines) == SIZE + 1

    # The whole bank to the server, and both downloads.
    whole = _finished(_start(client, "user-alice", kind="export", format="mhba", name="all.mhba.jsonl"))
    assert whole.result["full"] and whole.result["exported_count"] == SIZE
    download = client.get("/banks/user-alice/transfer/download")
    assert sum(1 for line in b"".join(download.streaming_content).splitlines() if line) == SIZE + 1
    archive = client.get("/banks/user-alice/transfer/download?full=1")
    rows = [json.loads(line) for line in b"".join(archive.streaming_content).splitlines() if line]
    assert sum(1 for row in rows if "text" in row and "_mhba" not in row) == SIZE

    # Import into another bank, and restore the whole-bank archive into a third, from their own folders.
    make_bank("user-alice-copy")
    (bank_folder(tmp_path, "user-alice-copy") / "all.ama.jsonl").write_text("\n".join(lines) + "\n")
    imported = _finished(_start(client, "user-alice-copy", kind="import", path="all.ama.jsonl"))
    assert imported.counts["imported"] == SIZE
    make_bank("user-alice-restored")
    (bank_folder(tmp_path, "user-alice-restored") / "all.mhba.jsonl").write_bytes(
        (bank_folder(tmp_path, "user-alice") / "all.mhba.jsonl").read_bytes())
    restored = _finished(_start(client, "user-alice-restored", kind="import", path="all.mhba.jsonl"))
    assert restored.result["format"] == "mhba"
    assert Memory.objects.filter(bank__bank_id="user-alice-restored").count() == SIZE

    reembed = _finished(_start(client, "user-alice", kind="reembed"))
    assert reembed.counts["reembedded"] == SIZE
    reextract = _finished(_start(client, "user-alice", kind="reextract_entities", confirm="yes"))
    assert reextract.progress_done == SIZE


@pytest.mark.worker
def test_a_cancelled_import_frees_its_worker_and_the_overview_shows_it_running(roots, celery_worker, operator_client,
                                                                               make_bank, tmp_path):
    make_bank("user-alice")
    total = 50_000
    with (bank_folder(tmp_path, "user-alice") / "big.jsonl").open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "x", "memory_count": total}) + "\n")
        for i in range(total):
            fp.write(json.dumps({"id": f"m{i}", "text": f"fact {i} on topic {i % 89}"}) + "\n")
    client = operator_client
    job = _start(client, "user-alice", kind="import", path="big.jsonl")
    wait_for(lambda: Job.objects.filter(pk=job.pk, state="running", progress_done__gt=0).exists(), timeout=300)
    overview = client.get("/banks/user-alice/").content.decode()
    assert f"import #{job.pk}</a> running · <span class=\"job-phase\">loading</span>" in overview
    page = client.get(f"/banks/user-alice/jobs/{job.pk}/").content.decode()
    # Cancel sits above the progress and the problem lines.
    assert page.index(">Cancel</button>") < page.index("<progress")

    assert client.post(f"/banks/user-alice/jobs/{job.pk}/cancel").status_code == 302
    stopped = wait_for(lambda: Job.objects.filter(pk=job.pk, state__in=Job.FINISHED).first(), timeout=60)
    assert stopped.state == "cancelled"
    assert Memory.objects.filter(bank__bank_id="user-alice").count() < total
    # The worker is free again: the next task runs.
    celery_app.send_task("banks.ping", args=["after-cancel"])
    wait_for(lambda: AuditEvent.objects.filter(action="worker.ping", details__value="after-cancel").exists(),
             timeout=60)


@pytest.mark.django_db(transaction=True)
def test_a_job_stuck_in_a_statement_is_stopped_and_its_transaction_ended(make_bank, settings):
    settings.MEMORYHUB_JOB_PULSE_SECONDS = 0.2
    settings.MEMORYHUB_JOB_CANCEL_GRACE_SECONDS = 1.0
    bank = make_bank("user-alice")
    job = job_create(kind="reembed", actor="t", bank=bank)
    outcome: dict[str, object] = {}
    started = threading.Event()

    def stuck() -> None:
        running = job_start(job=job)
        try:
            with job_pulse(running.pk), transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                outcome["pid"] = cursor.fetchone()[0]
                started.set()
                cursor.execute("SELECT pg_sleep(600)")  # work that never reaches a cancel check
        except Exception as exc:
            outcome["stopped"] = job_stopped_cleanly(running, exc)
        finally:
            connection.close()

    worker = threading.Thread(target=stuck)
    worker.start()
    assert started.wait(60)
    # Inside one long statement the job still beats, and says what it is doing.
    first = Job.objects.get(pk=job.pk).heartbeat_at
    wait_for(lambda: Job.objects.get(pk=job.pk).heartbeat_at > first, timeout=60)
    Job.objects.filter(pk=job.pk).update(cancel_requested=True)
    worker.join(120)
    assert not worker.is_alive() and outcome["stopped"] is True
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND state <> 'idle'", [outcome["pid"]])
        assert cursor.fetchone()[0] == 0


@pytest.mark.django_db
def test_the_job_page_says_what_a_running_job_does_and_what_it_means_meanwhile(make_bank, client, admin_user):
    bank = make_bank("user-alice")
    job = job_create(kind="import", actor="t", bank=bank)
    Job.objects.filter(pk=job.pk).update(state="running", phase="building index", heartbeat_at=timezone.now(),
                                         progress_done=20_000, progress_total=20_000)
    client.force_login(admin_user)
    page = client.get(f"/banks/user-alice/jobs/{job.pk}/").content.decode()
    assert '<strong class="job-phase">building index</strong>' in page
    assert "semantic search on this bank is exact" in page
    overview = client.get("/banks/user-alice/").content.decode()
    assert '<span class="job-phase">building index</span>' in overview
