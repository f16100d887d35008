"""A bare WSGI app for tests/test_web_liveness.py: two slow streams, one that reports progress."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from memoryhub.liveness import streamed

STEPS, STEP_SECONDS = 24, 0.25  # six seconds of body, three times the test's worker timeout


def _slow() -> Iterator[bytes]:
    for _ in range(STEPS):
        time.sleep(STEP_SECONDS)
        yield b"x" * 1024


def app(environ: dict, start_response: Callable) -> Iterator[bytes]:
    path = environ.get("PATH_INFO", "")
    if path == "/live":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return iter([b"ok"])
    start_response("200 OK", [("Content-Type", "application/octet-stream")])
    return streamed(_slow()) if path == "/beating" else _slow()
