"""The stand-ins for what is off this machine, in one place: an OpenAI-compatible server (embeddings and
chat), a slow embeddings provider, and a real MCP client session against the MCP server on localhost.
Fixtures defined here are made available to every test by tests/conftest.py."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from banks.providers.embeddings import HashingEmbedder


class JsonHandler(BaseHTTPRequestHandler):
    """The base of every stand-in provider: reads a JSON body, answers JSON, logs nothing."""

    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def send_json(self, payload: object, status: int = 200, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def send_empty(self, status: int) -> None:
        self.send_response(status)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


class LocalServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that stopped waiting (the timeout tests' own) is not the stand-in's error: the
        # answer it was not there for is dropped instead of printing a traceback into the run's output.
        if isinstance(sys.exc_info()[1], BrokenPipeError | ConnectionResetError):
            return
        super().handle_error(request, client_address)


@contextmanager
def local_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free loopback port for the block; yields ``http://127.0.0.1:<port>``."""
    httpd = LocalServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class FakeOpenAI(JsonHandler):
    delay = 0.0
    status = 200
    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.read_json()
        FakeOpenAI.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        time.sleep(FakeOpenAI.delay)
        if self.path.endswith("/embeddings"):
            payload = {"data": [{"index": i, "embedding": [0.5, 0.5, 0.0, 0.0]} for i, _ in enumerate(body["input"])]}
        else:
            content = {"answer": "Alice prefers tea.", "cited_ids": ["m1", "bogus"], "confidence": 0.8,
                       "entities": [{"name": "Alice", "entity_type": "PERSON"}]}
            payload = {"choices": [{"message": {"content": json.dumps(content)}}]}
        self.send_json(payload, FakeOpenAI.status)


@pytest.fixture
def openai_server() -> Iterator[str]:
    """The base URL (``.../v1``) of a local OpenAI-compatible server answering embeddings and chat."""
    FakeOpenAI.delay, FakeOpenAI.status, FakeOpenAI.requests = 0.0, 200, []
    with local_server(FakeOpenAI) as url:
        yield f"{url}/v1"


class SlowEmbeddings(JsonHandler):
    """An OpenAI-style embeddings endpoint that takes ``delay`` seconds, like a remote provider."""

    delay = 0.6
    embedder = HashingEmbedder(384)
    requested = threading.Event()

    def do_POST(self) -> None:  # noqa: N802
        body = self.read_json()
        SlowEmbeddings.requested.set()
        time.sleep(SlowEmbeddings.delay)
        data = [{"index": i, "embedding": self.embedder.embed_one(t)} for i, t in enumerate(body["input"])]
        self.send_json({"data": data})


@dataclass
class SlowProvider:
    spec: str
    requested: threading.Event  # set when an embedding request arrives; clear it before the step to watch


@pytest.fixture
def slow_embeddings(settings: Any) -> Iterator[SlowProvider]:
    """A provider whose embeddings take 0.6 s (served on this machine)."""
    with local_server(SlowEmbeddings) as url:
        settings.MEMORYHUB_EMBEDDINGS_URL = f"{url}/v1"
        settings.MEMORYHUB_EMBEDDINGS_DIMENSIONS = 384
        yield SlowProvider("openai:slow", SlowEmbeddings.requested)


@pytest.fixture
def mcp_url(transactional_db: None) -> Iterator[str]:
    """The MCP endpoint of the MCP server, served on localhost for the test."""
    from agents.mcp_server import build_app
    from tests.asgi_server import serving

    with serving(build_app()) as url:
        yield f"{url}/mcp"


async def session_calls(url: str, token: str, calls: list[tuple[str, dict]]) -> tuple[list[str], list[dict]]:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = [t.name for t in (await session.list_tools()).tools]
                results = []
                for name, args in calls:
                    result = await session.call_tool(name, args)
                    if result.is_error:
                        # Failures are error results whose text is Astrocyte's {"error", "detail"} object.
                        results.append({**json.loads(result.content[0].text), "isError": True})
                        continue
                    payload = result.structured_content
                    if payload is None:
                        payload = json.loads(result.content[0].text)
                    results.append(payload.get("result", payload) if isinstance(payload, dict) else payload)
                return tools, results
