"""Remote provider calls retry transient failures (429, 5xx, timeouts) within a small budget, honouring
Retry-After, through the one helper embeddings, the chat model and the reranker share. Against a local
HTTP server that answers a scripted sequence of statuses."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from banks.providers import base
from banks.providers.base import ProviderError, ProviderTimeout, RetryBudget, retry_after_seconds, send_json
from banks.providers.embeddings import OpenAICompatibleEmbedder
from banks.providers.llm import OpenAICompatibleLanguageModel
from banks.providers.rerank import HttpReranker
from tests.fakes import JsonHandler, local_server


class Scripted(JsonHandler):
    # Each request takes the next (status, headers, delay) of the script; past its end, 200.
    script: list[tuple[int, dict[str, str], float]] = []
    paths: list[str] = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.read_json()
        Scripted.paths.append(self.path)
        status, headers, delay = Scripted.script.pop(0) if Scripted.script else (200, {}, 0.0)
        time.sleep(delay)
        if status != 200:
            payload: object = {"error": {"message": "busy"}}
        elif self.path.endswith("/embeddings"):
            payload = {"data": [{"index": i, "embedding": [1.0, 0.0, 0.0]} for i, _ in enumerate(body["input"])]}
        elif self.path.endswith("/rerank"):
            payload = [{"index": i, "score": float(i)} for i, _ in enumerate(body["documents"])]
        else:
            payload = {"choices": [{"message": {"content": json.dumps({"summary": "- ok"})}}]}
        self.send_json(payload, status, headers)


@pytest.fixture
def server(monkeypatch) -> Iterator[str]:  # noqa: ANN001
    Scripted.script, Scripted.paths = [], []
    with local_server(Scripted) as url:
        yield f"{url}/v1"


@pytest.fixture
def waits(monkeypatch) -> list[float]:  # noqa: ANN001
    """The pauses the retries asked for, recorded instead of slept."""
    asked: list[float] = []
    monkeypatch.setattr(base, "sleep", asked.append)
    return asked


def embedder(url: str) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder("m", url=url, api_key="", dimensions=3, timeout=5)


def test_a_429_is_retried_after_the_wait_its_retry_after_asks(server, waits):
    Scripted.script = [(429, {"Retry-After": "2"}, 0.0)]
    assert embedder(server).embed(["a", "b"]) == [[1.0, 0.0, 0.0]] * 2
    assert Scripted.paths == ["/v1/embeddings"] * 2
    assert waits == [2.0]


def test_5xx_are_retried_with_a_short_backoff_then_reported(server, waits):
    Scripted.script = [(503, {}, 0.0)] * 5
    with pytest.raises(ProviderError, match="HTTP 503"):
        embedder(server).embed(["a"])
    assert len(Scripted.paths) == 3  # the default budget: three attempts
    assert len(waits) == 2 and all(0 < w <= 5.0 for w in waits)


def test_a_client_error_is_not_retried(server, waits):
    Scripted.script = [(400, {}, 0.0)]
    with pytest.raises(ProviderError, match="HTTP 400"):
        embedder(server).embed(["a"])
    assert len(Scripted.paths) == 1 and waits == []


def test_a_retry_after_beyond_the_budget_is_answered_at_once(server, waits):
    Scripted.script = [(429, {"Retry-After": "120"}, 0.0)]
    with pytest.raises(ProviderError, match="HTTP 429"):
        embedder(server).embed(["a"])
    assert len(Scripted.paths) == 1 and waits == []


def test_a_timeout_is_retried_for_embeddings(server, waits):
    Scripted.script = [(200, {}, 1.0)]
    slow_once = OpenAICompatibleEmbedder("m", url=server, api_key="", dimensions=3, timeout=0.3)
    assert slow_once.embed(["a"]) == [[1.0, 0.0, 0.0]]
    assert len(Scripted.paths) == 2 and len(waits) == 1


def test_the_chat_model_retries_through_the_same_helper(server, waits):
    Scripted.script = [(502, {}, 0.0), (429, {"Retry-After": "1"}, 0.0)]
    llm = OpenAICompatibleLanguageModel("gpt", url=server, api_key="", timeout=5)
    assert llm.summarize(["x"]) == "- ok"
    assert Scripted.paths == ["/v1/chat/completions"] * 3
    assert waits[1] == 1.0


def test_the_reranker_retries_once_briefly_and_never_after_a_timeout(server, waits):
    reranker = HttpReranker(url=server + "/rerank", timeout=0.3)
    Scripted.script = [(503, {"Retry-After": "0"}, 0.0)]
    assert reranker.score("q", ["a", "b"]) == [0.0, 1.0]
    assert len(Scripted.paths) == 2 and waits == [0.0]
    Scripted.paths.clear()
    Scripted.script = [(503, {}, 0.0), (503, {}, 0.0)]
    with pytest.raises(ProviderError, match="HTTP 503"):
        reranker.score("q", ["a"])
    assert len(Scripted.paths) == 2  # inside a recall: two attempts at most
    Scripted.paths.clear()
    Scripted.script = [(200, {}, 1.0)]
    with pytest.raises(ProviderTimeout):
        reranker.score("q", ["a"])
    assert len(Scripted.paths) == 1


def test_a_dropped_connection_is_retried_until_the_budget_ends(waits):
    with pytest.raises(ProviderError, match="unreachable"):
        send_json("p", "http://127.0.0.1:9/x", {}, api_key="", timeout=1, budget=RetryBudget(attempts=2))
    assert len(waits) == 1


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:10 GMT", now) == 10.0
    assert retry_after_seconds("Thu, 01 Jan 2026 11:00:00 GMT", now) == 0.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None
