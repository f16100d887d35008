"""A broker that cannot be reached: every queued operation is a 503 and leaves no orphan job.

A real server process whose CELERY_BROKER_URL points at a closed local port, against this
run's database. Before, each of these answered 500 after committing a ``queued`` job that
nothing would ever run, and that orphan refused every later consolidation with 409.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from banks.models import Job, JobState, Memory
from tests.live_process import closed_port, server_env, serving, start_web
from tests.portability.fixtures import bank_folder
from tests.worker import _database_url

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def broken_broker_server(transactional_db, tmp_path):
    shutil.copy(FIXTURES / "sample.ama.jsonl", bank_folder(tmp_path, "user-alice") / "in.ama.jsonl")
    env = server_env(_database_url(), CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0",
                     MEMORYHUB_PORTABILITY_ROOTS=str(tmp_path))
    with serving(start_web(tmp_path, env)) as (served,):
        yield served


def _assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["error"]["code"] == "service_unavailable"
    assert body["retry_after"] > 0 and int(response.headers["Retry-After"]) > 0
    assert "task queue" in body["detail"]


def test_queued_operations_answer_503_and_leave_no_queued_job(broken_broker_server, bank, make_token, tmp_path):
    headers = {"Authorization": f"Bearer {make_token()}"}
    with httpx.Client(base_url=broken_broker_server.url, headers=headers, timeout=60) as client:
        for _ in range(2):  # the second try is refused the same way, not with 409 by an orphan
            _assert_unavailable(client.post("/v1/observations/consolidate", json={"bank_id": bank.bank_id}))
        _assert_unavailable(client.post("/v1/import", json={
            "bank_id": bank.bank_id, "path": str(tmp_path / "in.ama.jsonl"), "async": True}))
        _assert_unavailable(client.post("/v1/export", json={
            "bank_id": bank.bank_id, "path": str(tmp_path / "out.ama.jsonl"), "async": True}))
        _assert_unavailable(client.post("/v1/ingest/turn", json={"bank_id": bank.bank_id, "user": "I moved to Oslo."}))

        jobs = list(Job.objects.filter(bank=bank).order_by("pk"))
        assert [j.kind for j in jobs] == ["consolidation", "consolidation", "import", "export"]
        assert all(j.state == JobState.FAILED and "task queue is unavailable" in j.message for j in jobs)
        assert not Memory.objects.filter(bank=bank).exists()
        # Work that needs no broker goes on as usual.
        assert client.post("/v1/retain", json={"bank_id": bank.bank_id, "content": "Still here."}).status_code == 200
