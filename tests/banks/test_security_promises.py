"""Promises under load and attack: constraints under concurrency, body caps, slow providers."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import connection

from banks.models import Memory
from banks.services.memories import memory_retain
from tests.conftest import ApiClient


@pytest.mark.django_db(transaction=True)
def test_concurrent_retains_of_the_same_content_store_it_once(make_bank):
    bank = make_bank("user-alice")
    results, errors = [], []
    barrier = threading.Barrier(8)

    def worker() -> None:
        try:
            barrier.wait()
            results.append(memory_retain(bank=bank, text="The same fact, retained eight times at once.",
                                         actor="test", near_dedup=False, extract_entities=False))
        except Exception as exc:  # the test reports any failure below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(r.stored for r in results) == 1
    assert Memory.objects.filter(bank=bank).count() == 1
    stored_id = next(r.memory_id for r in results if r.stored)
    assert all(r.memory_id == stored_id for r in results)


@pytest.mark.django_db
def test_a_body_over_the_cap_is_a_413_before_parsing(api, settings):
    settings.MEMORYHUB_MAX_REQUEST_BYTES = 1000
    response = api.post("/v1/retain", {"content": "x" * 5000, "bank_id": "user-alice"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert Memory.objects.count() == 0


class Slow(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        time.sleep(2)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.django_db
def test_a_slow_embeddings_provider_is_a_clear_503_not_a_hang(bank, make_token, settings):
    from banks.providers.embeddings import _cached

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    settings.MEMORYHUB_EMBEDDINGS_URL = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    settings.MEMORYHUB_PROVIDER_TIMEOUT = 0.3
    bank.embedding_provider = "openai:text-embedding-3-small"
    bank.save()
    _cached.cache_clear()
    try:
        response = ApiClient(make_token()).post("/v1/retain", {"content": "hello", "bank_id": "user-alice"})
        assert response.status_code == 503
        body = response.json()
        assert body["error"]["code"] == "provider_unavailable" and "did not answer within 0.3 s" in body["detail"]
        assert body["provider"] == "openai:text-embedding-3-small"
        assert Memory.objects.count() == 0
    finally:
        httpd.shutdown()
        _cached.cache_clear()
