"""Request edges every page and route must survive: control characters (NUL) in a page's URL, and
chunked bodies that carry no Content-Length."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.wsgi import get_wsgi_application
from django.urls import URLPattern, URLResolver, get_resolver

from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


def _page_routes() -> list[str]:
    """Every operator page's route, its converters filled with a NUL-bearing value."""
    routes = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                route = prefix + str(pattern.pattern)
                if route.startswith(("v1", "admin", "health", "live", "static", "mcp", "favicon")) or "^" in route:
                    continue
                routes.append("/" + route)

    walk(get_resolver().url_patterns, "")
    return routes


def _fill(route: str, value: str) -> str:
    import re

    return re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: "7" if m.group(1) == "int" else value, route)


@pytest.fixture
def superuser_client(django_user_model, client, make_bank):
    make_bank("user-alice")
    admin = django_user_model.objects.create_superuser(username="root", password="pw-root-123")
    client.force_login(admin)
    return client


def test_a_nul_in_any_page_url_is_a_400_or_404_page(superuser_client):
    routes = _page_routes()
    assert len(routes) > 20
    failures = []
    for route in routes:
        for value in ("user-alice%00x", "a%00", "%01", "x%7F"):
            if "<str:" not in route and "<rid:" not in route and "<slug:" not in route:
                break
            url = _fill(route, value)
            for method in ("get", "post"):
                response = getattr(superuser_client, method)(url)
                if response.status_code not in (400, 404, 405):
                    failures.append((method, url, response.status_code))
        for query in ("?q=%00", "?tag=a%00b", "?as_of=%00"):
            response = superuser_client.get(_fill(route, "user-alice") + query)
            if response.status_code >= 500:
                failures.append(("get", route + query, response.status_code))
    assert not failures


def test_the_400_page_says_why(superuser_client):
    response = superuser_client.get("/banks/user-alice%00/memories/")
    assert response.status_code == 400
    assert "not allowed" in response.content.decode()


def _wsgi(path: str, body: bytes, *, token: str = "", terminated: bool = True, chunked: bool = True) -> tuple[int, dict]:
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "SERVER_NAME": "testserver", "SERVER_PORT": "80",
        "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body), "wsgi.errors": io.StringIO(),
        "CONTENT_TYPE": "application/json", "HTTP_HOST": "testserver",
    }
    if chunked:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    else:
        environ["CONTENT_LENGTH"] = str(len(body))
    if terminated:
        environ["wsgi.input_terminated"] = True
    if token:
        environ["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    status: list[str] = []
    chunks = get_wsgi_application()(environ, lambda s, h, *a: status.append(s))
    content = b"".join(chunks)
    return int(status[0].split()[0]), json.loads(content) if content.startswith(b"{") else {}


@pytest.fixture
def no_connection_close():
    """The WSGI handler closes the connection at the end of a request; this test's transaction needs it."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_a_chunked_body_is_read_not_taken_as_empty(make_bank, make_token, no_connection_close):
    bank = make_bank("user-alice")
    token = make_token()
    body = json.dumps({"content": "Chunked bodies are read.", "bank_id": "user-alice"}).encode()
    status, answer = _wsgi("/v1/retain", body, token=token)
    assert status == 200, answer
    assert bank.memories.filter(text="Chunked bodies are read.").exists()
    memory_retain(bank=bank, text="Alice likes jazz.", actor="test")
    status, answer = _wsgi("/v1/recall", json.dumps({"query": "jazz", "bank_id": "user-alice"}).encode(), token=token)
    assert status == 200 and answer["hits"]


def test_a_chunked_body_over_the_cap_is_a_413(make_bank, make_token, settings, no_connection_close):
    make_bank("user-alice")
    settings.MEMORYHUB_MAX_REQUEST_BYTES = 1000
    status, answer = _wsgi("/v1/retain", json.dumps({"content": "x" * 2000, "bank_id": "user-alice"}).encode(),
                           token=make_token())
    assert status == 413 and answer["error"]["code"] == "request_too_large"


def test_a_chunked_body_the_server_did_not_end_is_a_411(make_bank, make_token, no_connection_close):
    make_bank("user-alice")
    status, answer = _wsgi("/v1/retain", b'{"content": "x", "bank_id": "user-alice"}', token=make_token(),
                           terminated=False)
    assert status == 411 and answer["error"]["code"] == "length_required"
    status, _ = _wsgi("/login/", b"username=a&password=b", terminated=True)
    assert status == 411
