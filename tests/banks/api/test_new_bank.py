"""A bank the caller is granted but that was never written answers as Astrocyte's implicit banks do:
reads are 200 with empty results and create nothing; writes Astrocyte accepts create the bank."""

from __future__ import annotations

import json

import pytest

from banks.models import AuditEvent, Bank, MentalModel, Observation
from tests.portability.fixtures import bank_folder

NEW = "user-new"
pytestmark = pytest.mark.django_db


@pytest.fixture
def client(api_for):
    return api_for({"user-*": ["read", "write", "forget", "admin"]})


# The reads themselves (every route, 200 and empty, nothing created) are in test_astrocyte_contract.py.


def test_a_bank_without_a_grant_stays_403(api_for):
    client = api_for({"user-alice": ["read"]})
    response = client.post("/v1/recall", {"query": "x", "bank_id": NEW})
    assert response.status_code == 403


def test_the_forget_on_a_new_bank_is_audited_by_its_id(client):
    client.post("/v1/forget", {"bank_id": NEW, "scope": "all", "reason": "cleanup"})
    event = AuditEvent.objects.get(action="memory.forget")
    assert event.bank is None and event.bank_ref == NEW


@pytest.mark.parametrize(("path", "body", "model"), [
    ("/v1/mental-models", {"model_id": "m1", "title": "Prefs", "content": "plain text content", "bank_id": NEW},
     MentalModel),
    ("/v1/directives", {"rule_text": "Answer briefly.", "bank_id": NEW}, MentalModel),
    ("/v1/observations", {"text": "Likes jazz.", "bank_id": NEW}, Observation),
])
def test_writes_astrocyte_accepts_create_the_bank(client, path, body, model):
    response = client.post(path, body)
    assert response.status_code == 200, response.content
    assert Bank.objects.filter(bank_id=NEW).exists()
    assert model.objects.filter(bank__bank_id=NEW).count() == 1


def test_export_of_a_new_bank_is_a_header_and_no_lines(client, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    response = client.post("/v1/export", {"bank_id": NEW, "path": str(tmp_path / "new.ama.jsonl")})
    assert response.status_code == 200, response.content
    assert response.json()["exported_count"] == 0
    lines = (bank_folder(tmp_path, NEW) / "new.ama.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["_ama_version"] == 1
    assert not Bank.objects.filter(bank_id=NEW).exists()


def test_import_creates_the_bank_and_containment_answers_first(client, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path / "root")
    (tmp_path / "root").mkdir()
    outside = client.post("/v1/import", {"bank_id": NEW, "path": str(tmp_path / "elsewhere.jsonl")})
    assert outside.status_code == 422
    archive = bank_folder(tmp_path / "root", NEW) / "a.ama.jsonl"
    archive.write_text(json.dumps({"_ama_version": 1, "bank_id": "x", "exported_at": "2026-01-01T00:00:00Z",
                                   "provider": "test", "memory_count": 1}) + "\n"
                       + json.dumps({"id": "m1", "text": "Alice likes jazz."}) + "\n")
    dry = client.post("/v1/import", {"bank_id": NEW, "path": str(archive), "dry_run": True})
    assert dry.status_code == 200 and not Bank.objects.filter(bank_id=NEW).exists()
    done = client.post("/v1/import", {"bank_id": NEW, "path": str(archive)})
    assert done.status_code == 200 and done.json()["imported"] == 1
    assert Bank.objects.get(bank_id=NEW).memories.count() == 1


def test_health_ingest_answers_astrocytes_shape(client):
    response = client.get("/health/ingest")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "aggregate": {"healthy": True, "message": "ingest ready"},
                               "sources": []}


@pytest.mark.parametrize("path", ["/v1/nope", "/v1/recall/extra", "/health/nope", "/live/nope", "/v1"])
def test_unknown_paths_answer_a_json_404_in_the_envelope(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"]["code"] == "not_found" and response.json()["detail"]
