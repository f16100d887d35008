"""/v1/export and /v1/import: containment over HTTP, round trips, jobs on a real worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection, transaction

from banks.models import Job, Memory
from banks.services.memories import memory_retain
from portability.services.importer import DEFAULT_BATCH
from tests.portability.fixtures import FIXTURES, bank_folder
from tests.worker import start_worker, wait_for

B = {"bank_id": "user-alice"}


@pytest.fixture
def roots(settings, tmp_path):
    root = tmp_path / "exports"
    root.mkdir()
    (tmp_path / "exports-evil").mkdir()
    (tmp_path / "secret.txt").write_text("do not touch")
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(root)
    return root


def snapshot(tmp_path: Path) -> set[str]:
    return {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")}


@pytest.mark.django_db
def test_no_roots_is_a_422_listing_the_three_ways(api, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = ""
    for path in ("/v1/export", "/v1/import"):
        response = api.post(path, {**B, "path": str(tmp_path / "x.ama.jsonl")})
        assert response.status_code == 422
        detail = response.json()["detail"]
        assert "allowed_roots" in detail and "MEMORYHUB_PORTABILITY_ROOTS" in detail
        assert "allow_uncontained" in detail
    assert list(tmp_path.iterdir()) == []


ATTACKS = [
    "{root}/../secret.txt",
    "{root}/../../../../../etc/passwd",
    "/etc/passwd",
    "{root}-evil/x.jsonl",
    "{root}/../exports-evil/x.jsonl",
    "{root}/link/secret.txt",
    "{root}/a\x00b.jsonl",
    "{root}/a\nb.jsonl",
    "{root}/" + "n" * 400,
    "{root}/%2e%2e/secret.txt",
    "{root}/%2E./secret.txt",
    "{root}/.%2e/secret.txt",
    "{root}/a\ud800b.jsonl",
    "{root}/a\u202eb.jsonl",
    "{root}/\u2025/secret.txt",
]


@pytest.mark.django_db
@pytest.mark.parametrize("attack", ATTACKS)
def test_every_path_attack_fails_closed_and_touches_nothing(api, roots, tmp_path, attack):
    (roots / "link").symlink_to(tmp_path)
    memory_retain(bank=api_bank(), text="Alice likes jazz.", actor="test")
    before = snapshot(tmp_path)
    path = attack.format(root=roots)
    # json.dumps escapes a lone surrogate as \ud800, as a client would send it.
    exported = api.post("/v1/export", json.dumps({**B, "path": path}))
    imported = api.post("/v1/import", json.dumps({**B, "path": path}))
    assert exported.status_code == 422 and imported.status_code == 422
    assert exported.json()["error"]["code"] == "unprocessable"
    assert snapshot(tmp_path) == before
    assert (tmp_path / "secret.txt").read_text() == "do not touch"


def app_broker() -> str:
    from config.celery import app

    return app.conf.broker_url


def api_bank():
    from banks.models import Bank

    return Bank.objects.get(bank_id="user-alice")


@pytest.mark.django_db
def test_export_then_import_over_http(api, roots, make_bank, api_for):
    memory_retain(bank=api_bank(), text="Alice likes jazz.", actor="test", tags=["music"])
    exported = api.post("/v1/export", {**B, "path": str(roots / "alice.ama.jsonl")})
    assert exported.status_code == 200
    assert exported.json()["exported_count"] == 1 and exported.json()["bank_id"] == "user-alice"
    # Written in the bank's own folder, and read back by the same path (each bank sees the root as its own).
    written = bank_folder(roots, "user-alice") / "alice.ama.jsonl"
    assert exported.json()["path"] == str(written) and written.is_file()
    assert not (roots / "alice.ama.jsonl").exists()
    assert api.post("/v1/import", {**B, "path": str(roots / "alice.ama.jsonl"), "dry_run": True}).status_code == 200
    make_bank("copy")
    # A token with admin on the copy alone reaches no file of user-alice, by any path.
    stranger = api_for({"copy": ["admin"]})
    for path in (str(roots / "alice.ama.jsonl"), str(written), "../../_/user-alice/alice.ama.jsonl"):
        assert stranger.post("/v1/import", {"bank_id": "copy", "path": path}).status_code == 422
    admin = api_for({"copy": ["admin"], "user-alice": ["admin"]})
    imported = admin.post("/v1/import", {"bank_id": "copy", "path": str(written)})
    assert imported.status_code == 200
    assert {k: imported.json()[k] for k in ("imported", "skipped", "errors")} == {"imported": 1, "skipped": 0,
                                                                                  "errors": 0}
    again = admin.post("/v1/import", {"bank_id": "copy", "path": str(written)}).json()
    assert (again["imported"], again["skipped"]) == (0, 1)
    bad = admin.post("/v1/import", {"bank_id": "copy", "path": str(written),
                                    "on_conflict": "replace"})
    assert bad.status_code == 400 and "on_conflict" in bad.json()["detail"]


@pytest.mark.django_db
def test_import_errors_are_422_not_500(api, roots):
    assert api.post("/v1/import", {**B, "path": str(roots / "missing.jsonl")}).status_code == 422
    (bank_folder(roots, "user-alice") / "v2.ama.jsonl").write_text('{"_ama_version": 2}\n')
    response = api.post("/v1/import", {**B, "path": str(roots / "v2.ama.jsonl")})
    assert response.status_code == 422 and "Unsupported AMA version 2" in response.json()["detail"]
    assert api.post("/v1/export", {**B, "path": str(roots)}).status_code == 422


@pytest.mark.django_db
def test_dry_run_over_http_reports_line_errors(api, roots):
    (bank_folder(roots, "user-alice") / "s.ama.jsonl").write_bytes(
        (FIXTURES / "sample.ama.jsonl").read_bytes() + b"{broken\n")
    body = api.post("/v1/import", {**B, "path": str(roots / "s.ama.jsonl"), "dry_run": True}).json()
    assert body["counts"]["imported"] == 10 and body["counts"]["observations"] == 1
    assert body["counts"]["duplicates"] == 1 and body["counts"]["invalid"] == 1
    assert body["line_errors"][-1]["line"] == 14
    assert Memory.objects.count() == 0


@pytest.fixture
def worker_roots(settings, tmp_path):
    """Roots set before the worker starts, so the worker process has them too."""
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    return tmp_path


@pytest.mark.worker
def test_async_import_runs_on_the_worker_with_progress(worker_roots, celery_worker, make_bank, make_token,
                                                        tmp_path):
    from tests.conftest import ApiClient

    make_bank("user-alice")
    client = ApiClient(make_token())
    (bank_folder(tmp_path, "user-alice") / "s.ama.jsonl").write_bytes((FIXTURES / "sample.ama.jsonl").read_bytes())
    started = client.post("/v1/import", {**B, "path": str(tmp_path / "s.ama.jsonl"), "async": True})
    assert started.status_code == 202
    job_id = started.json()["job_id"]
    done = wait_for(lambda: Job.objects.filter(pk=job_id, state__in=Job.FINISHED).first())
    assert done.state == "succeeded", done.message
    assert done.counts["imported"] + done.counts["observations"] == 11 and done.progress_done == 12
    status = client.get(f"/v1/jobs/{job_id}", B).json()
    assert status["state"] == "succeeded" and status["result"]["imported"] == 11


def _waiting_on_a_lock() -> bool:
    """A backend of this test database waits for a row lock (the worker, at its progress update)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0] > 0


def _blocked_after_a_batch(batch: int) -> bool:
    """The worker committed a batch and now waits on the job's row lock to record it. The job's pulse
    thread waits on that lock too, from the moment the job starts, so a waiter alone proves nothing:
    the batch must be there as well (the import records its progress after each committed batch)."""
    return _waiting_on_a_lock() and Memory.objects.count() >= batch


@pytest.mark.worker
def test_a_killed_import_can_run_again_without_duplicates(worker_roots, celery_worker, make_bank, make_token,
                                                          tmp_path):
    """A real worker is SIGKILLed in the middle of an import, after its first batch committed; a re-run
    on another worker imports exactly the rest, and no memory is stored twice.

    The kill is made deterministic, not raced against the import: while the test holds the job's row
    lock, the worker commits a batch of 500, then blocks recording that progress (it can neither go on
    nor finish); it is killed there, mid-import, with lines of the archive left unread."""
    from tests.conftest import ApiClient

    make_bank("user-alice")
    client = ApiClient(make_token())
    total, batch = 3 * DEFAULT_BATCH, DEFAULT_BATCH
    with (bank_folder(tmp_path, "user-alice") / "big.ama.jsonl").open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "x", "exported_at": "", "provider": "p",
                             "memory_count": total}) + "\n")
        for i in range(total):
            fp.write(json.dumps({"id": f"m{i}", "text": f"memory number {i} of the big archive"}) + "\n")
    # The worker for the re-run starts now, so its start-up overlaps the first import.
    second = start_worker(tmp_path, app_broker())
    try:
        job_id = client.post("/v1/import", {**B, "path": str(tmp_path / "big.ama.jsonl"),
                                            "async": True}).json()["job_id"]
        # The lock is taken once the import has written its "loading" phase, so what it blocks on is the
        # progress of its first committed batch, not the phase before it.
        wait_for(lambda: Job.objects.filter(pk=job_id, state="running", phase="loading").exists(), timeout=120,
                 interval=0.05)
        with transaction.atomic():
            Job.objects.select_for_update().get(pk=job_id)
            wait_for(lambda: _blocked_after_a_batch(batch), timeout=120, interval=0.05)
            # Its session waits on this very lock: it can end only once the lock is let go.
            celery_worker.kill(wait_for_sessions=False)
        celery_worker.sessions_ended()
        assert Job.objects.get(pk=job_id).state == "running"  # it died without a word
        partial = Memory.objects.count()
        # Whole committed batches landed (the first, or the second had the test been slow to lock), never all.
        assert partial in (batch, 2 * batch) and partial < total

        from config.celery import app

        app.conf.task_default_queue = second.queue
        rerun = client.post("/v1/import", {**B, "path": str(tmp_path / "big.ama.jsonl"), "async": True}).json()
        done = wait_for(lambda: Job.objects.filter(pk=rerun["job_id"], state__in=Job.FINISHED).first(), timeout=300)
        assert done.state == "succeeded", done.message
        assert done.counts["imported"] == total - partial and done.counts["skipped"] == partial
        assert Memory.objects.count() == total
        assert Memory.objects.values("memory_id").distinct().count() == total
    finally:
        second.process.terminate()
        second.process.wait(timeout=30)
