"""A big import as a job on a real worker: stored first, vectors filled in, the bank's own index built."""

from __future__ import annotations

import json

import pytest

from banks.models import Bank, Job, Memory
from banks.selectors.recall import recall_memories
from banks.vectors import bank_index_name, vector_index_state
from tests.portability.fixtures import bank_folder
from tests.worker import wait_for


@pytest.fixture
def big_import_env(monkeypatch, settings, tmp_path):
    """Set before the worker starts: its process reads them from the environment."""
    monkeypatch.setenv("MEMORYHUB_OWN_VECTOR_INDEX_MIN", "500")
    monkeypatch.setenv("MEMORYHUB_IMPORT_DEFER_VECTORS", "always")
    monkeypatch.setenv("MEMORYHUB_EMBED_WORKERS", "2")
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    return tmp_path


@pytest.mark.worker
def test_a_big_import_job_builds_the_banks_own_index(big_import_env, celery_worker, make_bank, make_token, tmp_path):
    from tests.conftest import ApiClient

    make_bank("user-alice")
    client = ApiClient(make_token())
    total = 1200
    texts = [f"memory number {i} about subject {i % 37} and detail {(i * 7919) % 10007}" for i in range(total)]
    with (bank_folder(tmp_path, "user-alice") / "big.ama.jsonl").open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "x", "memory_count": total}) + "\n")
        for i, text in enumerate(texts):
            fp.write(json.dumps({"id": f"m{i}", "text": text}) + "\n")
    job_id = client.post("/v1/import", {"bank_id": "user-alice", "path": str(tmp_path / "big.ama.jsonl"),
                                        "async": True}).json()["job_id"]
    done = wait_for(lambda: Job.objects.filter(pk=job_id, state__in=Job.FINISHED).first(), timeout=300)
    assert done.state == "succeeded", done.message
    assert done.counts["imported"] == total

    bank = Bank.objects.get(bank_id="user-alice")
    assert bank.own_vector_index
    assert Memory.objects.filter(bank=bank).count() == total
    assert not Memory.objects.filter(bank=bank, embedding_dims__isnull=True).exists()
    assert vector_index_state(bank.pk) == "own"
    hits, _, trace, _ = recall_memories(bank, texts[321], max_results=3, arms=("semantic",))
    assert hits[0].text == texts[321] and trace.vector_index == "own"
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)",
                       [bank_index_name(bank.pk)])
        assert cursor.fetchone() == (True,)
