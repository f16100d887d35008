"""Tell the web server a long request is still moving.

gunicorn's sync workers (the default, see ``serve``) are replaced when they stay silent for
``--timeout`` seconds, and a worker is silent for as long as one request runs. That is the point for a
request stuck on a lock or a provider, but a 2 GB upload or a million-memory download on a slow link
can take longer than any sensible timeout while bytes keep moving. Such transfers report each chunk
here; the worker tells its arbiter it is alive at most once a second, so only a request that makes no
progress for the whole timeout is cut.

Outside gunicorn (the development server, tests, Celery) nothing is registered and ``beat`` does
nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.core.files.uploadhandler import FileUploadHandler

_notify: Callable[[], None] | None = None
_last = 0.0
INTERVAL = 1.0  # seconds between two notes to the arbiter: a file's mtime, cheap but not free


def register(notify: Callable[[], None] | None) -> None:
    """Called once in each web worker process (gunicorn's ``post_worker_init`` hook)."""
    global _notify, _last
    _notify, _last = notify, 0.0


def beat() -> None:
    global _last
    if _notify is None:
        return
    now = time.monotonic()
    if now - _last >= INTERVAL:
        _last = now
        _notify()


def streamed(chunks: Iterable[Any]) -> Iterator[Any]:
    """The chunks of a streaming response, with a beat before each one is sent."""
    for chunk in chunks:
        beat()
        yield chunk


class ProgressUploadHandler(FileUploadHandler):
    """First of FILE_UPLOAD_HANDLERS: passes every chunk on untouched, beating as they arrive."""

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        beat()
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler builds the file
