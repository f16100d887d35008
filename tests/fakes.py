"""The stand-ins for what is off this machine, in one place: an OpenAI-compatible server (embeddings and
chat), a slow embeddings provider, and a real MCP client session against the MCP server on localhost.
Fixtures defined here are made available to every test by tests/conftest.py."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from banks.providers.embeddings import HashingEmbedder


class FakeOpenAI(BaseHTTPRequestHandler):
    delay = 0.0
    status = 200
    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeOpenAI.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        time.sleep(FakeOpenAI.delay)
        if self.path.endswith("/embeddings"):
            payload = {"data": [{"index": i, "embedding": [0.5, 0.5, 0.0, 0.0]} for i, _ in enumerate(body["input"])]}
        else:
            content = {"answer": "Alice prefers tea.", "cited_ids": ["m1", "bogus"], "confidence": 0.8,
                       "entities": [{"name": "Alice", "entity_type": "PERSON"}]}
            payload = {"choices": [{"message": {"content": json.dumps(content)}}]}
        raw = json.dumps(payload).encode()
        self.send_response(FakeOpenAI.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def openai_server() -> Iterator[str]:
    """The base URL (``.../v1``) of a local OpenAI-compatible server answering embeddings and chat."""
    FakeOpenAI.delay, FakeOpenAI.status, FakeOpenAI.requests = 0.0, 200, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


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
