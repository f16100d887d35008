"""Helpers for tests that race real threads against the real database, and a slow local embeddings server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import connection

from banks.providers.embeddings import HashingEmbedder


def run_in_threads(count: int, work: Callable[[int], Any]) -> tuple[list[Any], list[BaseException | None]]:
    """Run ``work(i)`` in ``count`` threads released together; each thread uses (and closes) its own
    database connection. Returns the results and the exceptions, by thread index."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException | None] = [None] * count

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001  (reported to the test)
            errors[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results, errors


class SlowEmbeddings(BaseHTTPRequestHandler):
    """An OpenAI-style embeddings endpoint that takes ``delay`` seconds, like a remote provider."""

    delay = 0.6
    embedder = HashingEmbedder(384)
    requested = threading.Event()

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        SlowEmbeddings.requested.set()
        time.sleep(SlowEmbeddings.delay)
        data = [{"index": i, "embedding": self.embedder.embed_one(t)} for i, t in enumerate(body["input"])]
        raw = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class SlowProvider:
    spec: str
    requested: threading.Event  # set when an embedding request arrives; clear it before the step to watch


@pytest.fixture
def slow_embeddings(settings: Any) -> Iterator[SlowProvider]:
    """A provider whose embeddings take 0.6 s (served on this machine)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), SlowEmbeddings)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    settings.MEMORYHUB_EMBEDDINGS_URL = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    settings.MEMORYHUB_EMBEDDINGS_DIMENSIONS = 384
    yield SlowProvider("openai:slow", SlowEmbeddings.requested)
    httpd.shutdown()
