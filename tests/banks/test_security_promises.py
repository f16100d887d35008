"""Promises under load and attack (spec: security.md): constraints under concurrency, body caps, slow
providers (embeddings and language model), CSRF on forms and HTMX, cookie flags in production."""

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


@pytest.mark.django_db
def test_a_slow_language_model_is_a_clear_503_not_a_hang(bank, make_token, settings):
    from banks.providers.llm import _cached

    memory_retain(bank=bank, text="The invoice run happens every Friday at noon.", actor="test",
                  extract_entities=False)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    settings.MEMORYHUB_LLM = "openai:gpt-4o-mini"
    settings.MEMORYHUB_LLM_URL = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    settings.MEMORYHUB_PROVIDER_TIMEOUT = 0.3
    _cached.cache_clear()
    try:
        response = ApiClient(make_token()).post("/v1/reflect", {"query": "When is the invoice run?",
                                                                "bank_id": "user-alice"})
        assert response.status_code == 503, response.content
        body = response.json()
        assert body["error"]["code"] == "provider_unavailable" and "did not answer within 0.3 s" in body["detail"]
    finally:
        httpd.shutdown()
        _cached.cache_clear()


@pytest.mark.django_db
def test_forms_and_htmx_requests_without_the_csrf_token_are_refused(bank, django_user_model):
    from django.test import Client

    operator = django_user_model.objects.create_superuser(username="root", password="pw-root-123")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(operator)
    url = f"/banks/{bank.bank_id}/memories/new"
    form = {"text": "Retained from a forged form.", "tags": "", "fact_type": ""}
    assert browser.post(url, form).status_code == 403
    assert browser.post(url, form, HTTP_HX_REQUEST="true").status_code == 403
    assert browser.post(url, form, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN="forged").status_code == 403
    assert Memory.objects.filter(bank=bank).count() == 0
    # The same request with the token the page hands out goes through: the refusals above were CSRF's.
    browser.get(f"/banks/{bank.bank_id}/memories/")
    token = browser.cookies["csrftoken"].value
    assert browser.post(url, form, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token).status_code in (200, 302)
    assert Memory.objects.filter(bank=bank).count() == 1


@pytest.mark.django_db
def test_session_and_csrf_cookies_are_http_only_and_secure_in_production(settings, django_user_model):
    from django.test import Client

    from tests.test_settings_env import settings_value

    production = {"DATABASE_URL": "postgresql://u@127.0.0.1:1/x", "SECRET_KEY": "k" * 50}
    flags = "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY"
    assert settings_value(production, flags) == "True True True"
    # And what a browser receives at login carries those flags.
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    django_user_model.objects.create_user(username="olga", password="pw-olga-123")
    browser = Client()
    browser.get("/login/")
    csrf = browser.cookies["csrftoken"]
    assert csrf["secure"]
    response = browser.post("/login/", {"username": "olga", "password": "pw-olga-123"})
    assert response.status_code == 302
    session = response.cookies[settings.SESSION_COOKIE_NAME]
    assert session["httponly"] and session["secure"]
