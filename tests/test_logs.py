"""Log lines an operator can follow: the request's id on every line written while it runs (also on the
helper thread recall reads beside it), JSON when asked, plain otherwise."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from memoryhub.logs import PLAIN_FORMAT, JsonFormatter, RequestIdFilter, logging_config
from memoryhub.middleware import RequestIdMiddleware
from memoryhub.read_beside import read_beside
from tests.test_settings_env import settings_value

logger = logging.getLogger("memoryhub.tests.logs")


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """What the console handler of the settings writes, in JSON, for this test's logger."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)


def written(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def view(request: HttpRequest) -> HttpResponse:
    logger.info("answering %s", request.path)
    try:
        raise ValueError("a failure worth a traceback")
    except ValueError:
        logger.exception("it failed")
    return HttpResponse("ok")


def test_every_line_of_a_request_carries_its_id(lines):
    middleware = RequestIdMiddleware(view)
    response = middleware(RequestFactory().get("/somewhere", HTTP_X_REQUEST_ID="req-42"))
    assert response["X-Request-ID"] == "req-42"
    first, second = written(lines)
    assert (first["message"], first["request_id"], first["level"], first["logger"]) == (
        "answering /somewhere", "req-42", "INFO", "memoryhub.tests.logs")
    assert second["request_id"] == "req-42" and "ValueError: a failure worth a traceback" in second["exception"]
    logger.info("after the request")
    assert written(lines)[-1]["request_id"] == "-"


def test_a_minted_id_is_the_one_the_lines_and_the_response_carry(lines):
    response = RequestIdMiddleware(view)(RequestFactory().get("/x", HTTP_X_REQUEST_ID="not a valid id!"))
    minted = response["X-Request-ID"]
    assert minted != "not a valid id!" and {line["request_id"] for line in written(lines)} == {minted}


@pytest.mark.django_db(transaction=True)
def test_the_helper_thread_writes_with_the_requests_id(lines):
    def beside(request: HttpRequest) -> HttpResponse:
        future = read_beside(lambda: logger.info("read beside"))
        assert future is not None
        future.result(timeout=30)
        return HttpResponse("ok")

    RequestIdMiddleware(beside)(RequestFactory().get("/", HTTP_X_REQUEST_ID="req-beside"))
    assert written(lines)[0]["request_id"] == "req-beside"


def test_the_settings_pick_the_format():
    assert settings_value({}, "s.LOGGING['handlers']['console']['formatter']") == "plain"
    assert settings_value({"MEMORYHUB_LOG_FORMAT": "json"}, "s.LOGGING['handlers']['console']['formatter']") == "json"
    assert settings_value({"MEMORYHUB_LOG_FORMAT": ""}, "s.LOGGING['handlers']['console']['formatter']") == "plain"
    config = logging_config("plain", "INFO")
    assert config["formatters"]["plain"]["format"] == PLAIN_FORMAT  # type: ignore[index]
    assert "%(request_id)s" in PLAIN_FORMAT
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="MEMORYHUB_LOG_FORMAT must be one of plain, json; got 'xml'"):
        logging_config("xml", "INFO")


def test_the_celery_workers_own_handlers_write_the_same_lines(settings):
    from config.celery import _format_like_the_web

    stream = io.StringIO()
    worker_logger = logging.getLogger("memoryhub.tests.celery")
    worker_logger.handlers = [logging.StreamHandler(stream)]
    worker_logger.setLevel(logging.INFO)
    worker_logger.propagate = False
    settings.MEMORYHUB_LOG_FORMAT = "json"
    _format_like_the_web(worker_logger)
    worker_logger.info("task done")
    assert json.loads(stream.getvalue()) | {"time": None} == {
        "time": None, "level": "INFO", "logger": "memoryhub.tests.celery", "message": "task done", "request_id": "-"}
