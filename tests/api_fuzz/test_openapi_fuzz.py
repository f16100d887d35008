"""The /v1 API against its own OpenAPI document, driven by generated requests.

Every operation in /v1/openapi.json gets a bounded number of schema-valid requests and as many the
document calls invalid (schemathesis, derandomized so a run is repeatable), sent in-process to the
Django application, so they read and write this test run's database. No answer may be a 5xx or use
a status code the document does not list for the operation; answers to valid requests must match
the body documented for their status. Every operation with a body is also sent bodies no schema
describes (cut-off JSON, an array, bytes that are not UTF-8, other content types).

Most requests carry a token granted on two banks (everything on ``fuzz-full``, read only on
``fuzz-read``) and name one of them, so they pass authentication and reach the handlers; the others
carry no token, a wrong one, or name a bank the token has no grant on.

Narrow with ``PYTEST_ARGS="-m fuzz"`` (or ``-m 'not fuzz'`` to leave it out, ``-k 'retain'`` for the
operations of one path); ``FUZZ_EXAMPLES`` sets the examples per operation and mode (default 12),
``FUZZ_LOG=<file>`` records every request's status.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from banks.services.banks import bank_create
from banks.services.directives import directive_create
from banks.services.jobs import job_create, job_fail
from banks.services.memories import memory_retain
from banks.services.mental_models import mental_model_create
from banks.services.observations import observation_create
from banks.services.tokens import token_create
from tests.portability.fixtures import FIXTURES

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))
LOG = os.environ.get("FUZZ_LOG")  # a file to append "<mode> <method> <path> <status>" per request
FULL, READ = "fuzz-full", "fuzz-read"


@cache
def _document() -> dict[str, Any]:
    response = Client().get("/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


@cache
def _schema() -> Any:
    return schemathesis.openapi.from_dict(_document())


def _cases() -> list[Any]:
    """(method, path, mode) for every operation; the negative mode only where there is an input to spoil."""
    cases = []
    for path, item in sorted(_document()["paths"].items()):
        for method, operation in sorted(item.items()):
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            cases.append(pytest.param(method.upper(), path, GenerationMode.POSITIVE,
                                      id=f"{method.upper()} {path} positive"))
            if operation.get("parameters") or operation.get("requestBody"):
                cases.append(pytest.param(method.upper(), path, GenerationMode.NEGATIVE,
                                          id=f"{method.upper()} {path} negative"))
    return cases


def no_server_error(ctx: Any, response: Any, case: Any) -> bool:
    assert response.status_code < 500, f"{response.status_code}: {response.content[:2000]!r}"
    return True


CHECKS = [no_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Requests the document calls invalid: any documented refusal, never a 5xx.
NEGATIVE_CHECKS = [no_server_error, status_code_conformance, content_type_conformance]


@pytest.fixture
def fuzz_world(db: None, settings: Any, tmp_path: Path) -> dict[str, Any]:
    """Two banks with a little of everything, so requests aimed at real ids reach real objects, and an
    archive root with files an import or export may be aimed at."""
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    (tmp_path / "sample.ama.jsonl").write_bytes((FIXTURES / "sample.ama.jsonl").read_bytes())
    (tmp_path / "conversations.json").write_text('[{"mapping": {}, "current_node": "x", "title": ')
    (tmp_path / "out").mkdir()
    paths = [str(tmp_path / "sample.ama.jsonl"), str(tmp_path / "conversations.json"),
             str(tmp_path / "out" / "export.ama.jsonl"), str(tmp_path / "out")]
    full = bank_create(bank_id=FULL, actor="test", get_existing=True)
    read = bank_create(bank_id=READ, actor="test", get_existing=True)
    memory = None
    for text in ("Customer prefers dark mode.", "The invoice run is on Fridays."):
        memory = memory_retain(bank=full, text=text, actor="test")
    memory_retain(bank=read, text="Only readable here.", actor="test")
    assert memory is not None
    mental_model_create(bank=full, model_id="fuzz-model", title="Preferences", actor="test",
                        content="# Preferences\n\nDark mode.")
    directive = directive_create(bank=full, rule_text="Answer in English.", actor="test")
    observation = observation_create(bank=full, text="Customers like dark mode.", actor="test")
    job = job_fail(job=job_create(kind="import", actor="test", bank=full, params={}), message="stopped")
    _, granted = token_create(name="fuzz", actor="test", grants=[
        {"bank": FULL, "permissions": ["read", "write", "forget", "admin"]},
        {"bank": READ, "permissions": ["read"]},
    ])
    return {
        "tokens": {"granted": granted, "wrong": "mh_not-a-real-token", "none": ""},
        "ids": {"model_id": "fuzz-model", "directive_id": directive.model_id,
                "observation_id": observation.observation_id, "job_id": job.pk, "number": 1,
                "memory_id": memory.memory_id},
        "paths": paths,
    }


def _aim(case: Any, bank: str | None, ids: dict[str, Any] | None, file: str | None = None) -> None:
    """Point a generated request at one of the granted banks, for ``ids`` at objects that exist, and
    for ``file`` at a file in the archive root (``None``: leave what was generated)."""
    path = case.path_parameters if isinstance(case.path_parameters, dict) else {}
    query = case.query if isinstance(case.query, dict) else {}
    body = case.body if isinstance(case.body, dict) else {}
    if bank is not None:
        for container in (path, query, body):
            if "bank_id" in container:
                container["bank_id"] = bank
    for name, value in (ids or {}).items():
        if name in path:
            path[name] = value
    if file is not None and "path" in body:
        body["path"] = file


class InProcessApp:
    """Django's WSGI application as the test client runs it: a request must not close the database
    connection, which holds this test's transaction."""

    def __init__(self) -> None:
        self.app = get_wsgi_application()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            return self.app(environ, start_response)
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)


@pytest.mark.parametrize(("method", "path", "mode"), _cases())
def test_operation_answers_as_documented(fuzz_world, method, path, mode):
    operation = _schema()[path][method]
    app = InProcessApp()

    @given(data=st.data())
    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def run(data: st.DataObject) -> None:
        case = data.draw(operation.as_strategy(generation_mode=mode))
        who = data.draw(st.sampled_from(["granted"] * 6 + ["none", "wrong"]))
        _aim(case, data.draw(st.sampled_from([FULL, FULL, FULL, READ, None])),
             data.draw(st.sampled_from([fuzz_world["ids"], None])),
             data.draw(st.sampled_from([*fuzz_world["paths"], None])))
        token = fuzz_world["tokens"][who]
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = case.call(app=app, headers=headers)
        if LOG:
            with open(LOG, "a") as log:
                log.write(f"{mode.value} {method} {path} {response.status_code}\n")
        case.validate_response(response, checks=CHECKS if mode is GenerationMode.POSITIVE else NEGATIVE_CHECKS,
                               headers=headers)

    run()


MALFORMED = [
    ("application/json", b'{"bank_id": "fuzz-full", '),  # cut short
    ("application/json", b"[1, 2, 3]"),
    ("application/json", b'"just a string"'),
    ("application/json", b"\xff\xfe not utf-8"),
    ("application/json", b'{"bank_id": "fuzz-full", "x": NaN}'),
    ("text/plain", b"bank_id=fuzz-full"),
    ("application/x-www-form-urlencoded", b"bank_id=fuzz-full&content=hi"),
]


def _with_body() -> list[Any]:
    return [pytest.param(method.upper(), path, id=f"{method.upper()} {path}")
            for path, item in sorted(_document()["paths"].items()) for method, op in sorted(item.items())
            if method in {"post", "put", "patch"} and op.get("requestBody")]


@pytest.mark.parametrize(("method", "path"), _with_body())
def test_malformed_bodies_are_refused_as_documented(fuzz_world, method, path):
    """Bodies no schema describes: cut-off JSON, a JSON array or string, bytes that are not UTF-8,
    NaN, other content types. Each is a documented 4xx naming the problem, never a 5xx."""
    documented = {int(code) for code in _document()["paths"][path][method.lower()]["responses"]}
    client = Client()
    url = path
    for name, value in {**fuzz_world["ids"], "bank_id": FULL, "source_id": "none", "name": "memory_recall"}.items():
        url = url.replace("{" + name + "}", str(value))
    headers = {"HTTP_AUTHORIZATION": f"Bearer {fuzz_world['tokens']['granted']}"}
    for content_type, body in MALFORMED:
        response = getattr(client, method.lower())(url, body, content_type=content_type, **headers)
        assert response.status_code < 500, (content_type, body, response.content[:500])
        assert response.status_code in documented, (content_type, body, response.status_code, response.content[:300])
        assert 400 <= response.status_code < 500
