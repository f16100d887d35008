"""Embedding servers a user already runs (OpenAI-compatible, TEI, Ollama), named per bank by model and URL,
against a local HTTP server that speaks all three."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from banks.models import Bank, Memory
from banks.providers.base import ProviderError
from banks.providers.embeddings import build_embedder, embedder_spec, get_embedder
from banks.providers.remote_embeddings import BATCH, split_spec
from banks.selectors.recall import recall_memories
from banks.services.memories import memory_retain
from tests.fakes import JsonHandler, local_server


def vector_of(text: str) -> list[float]:
    """Five dimensions: one per topic word the text holds, plus a constant so no vector is zero."""
    words = text.lower()
    return [float("tea" in words), float("sail" in words), float("violin" in words), float("paris" in words), 0.1]


class EmbeddingServer(JsonHandler):
    requests: list[dict[str, Any]] = []
    # Refuse any batch holding a text that contains this (a turn whose context is being refreshed).
    refuse_containing: str | None = None

    def do_POST(self) -> None:  # noqa: N802
        body = self.read_json()
        EmbeddingServer.requests.append({"path": self.path, "body": body})
        texts = body.get("inputs") or body.get("input") or []
        if EmbeddingServer.refuse_containing and any(EmbeddingServer.refuse_containing in t for t in texts):
            self.send_empty(400)
            return
        payload: Any
        if self.path == "/embed":  # TEI
            payload = [vector_of(t) for t in body["inputs"]]
        elif self.path == "/api/embed":  # Ollama
            payload = {"model": body["model"], "embeddings": [vector_of(t) for t in body["input"]]}
        elif self.path == "/v1/embeddings":
            payload = {"data": [{"index": i, "embedding": vector_of(t)} for i, t in reversed(list(enumerate(body["input"])))]}
        elif self.path == "/weird/embed":
            payload = {"unexpected": "shape"}
        else:
            self.send_empty(404)
            return
        self.send_json(payload)


@pytest.fixture
def server() -> Iterator[str]:
    EmbeddingServer.requests, EmbeddingServer.refuse_containing = [], None
    with local_server(EmbeddingServer) as url:
        yield url


@pytest.mark.parametrize(("spec", "path"), [("tei:bge-small", "/embed"), ("ollama:nomic-embed-text", "/api/embed"),
                                            ("openai:local-model", "/v1/embeddings")])
def test_each_server_kind_embeds_in_batches_and_tells_its_size(server, spec, path):
    kind = spec.partition(":")[0]
    url = server + ("/v1" if kind == "openai" else "")
    embedder = build_embedder(f"{spec}@{url}")
    texts = [f"text {i} about tea" for i in range(BATCH[kind] + 3)]
    vectors = embedder.embed(texts)
    assert vectors == [vector_of(t) for t in texts]
    assert embedder.dimensions == 5 and embedder.name == spec
    calls = [r for r in EmbeddingServer.requests if r["path"] == path]
    sizes = [len(r["body"].get("inputs") or r["body"].get("input")) for r in calls]
    assert sizes == [BATCH[kind], 3]
    if kind != "tei":
        assert all(r["body"]["model"] == spec.partition(":")[2] for r in calls)
    # The pin keeps the URL: the bank is embedded by the same server again.
    assert embedder_spec(embedder) == f"{spec}@{url}"


def test_the_vector_size_is_asked_once_when_first_needed(server):
    embedder = build_embedder(f"ollama:m@{server}")
    assert EmbeddingServer.requests == []
    assert embedder.dimensions == 5 and embedder.dimensions == 5
    assert len(EmbeddingServer.requests) == 1


def test_specs_are_checked():
    assert split_spec("bge@http://h:8080/") == ("bge", "http://h:8080")
    assert split_spec("text-embedding-3-small") == ("text-embedding-3-small", "")
    with pytest.raises(ProviderError, match="must start with http"):
        build_embedder("tei:bge@localhost:8080")
    with pytest.raises(ProviderError, match="name the server's URL"):
        build_embedder("ollama:nomic-embed-text")
    with pytest.raises(ProviderError, match="name the model"):
        build_embedder("tei:@http://localhost:8080")
    with pytest.raises(ProviderError, match="ollama:<model>@<url>"):
        build_embedder("word2vec:x")


def test_a_wrong_url_or_answer_is_a_provider_error(server):
    with pytest.raises(ProviderError, match="HTTP 404"):
        build_embedder(f"openai:m@{server}/nowhere").embed(["a"])
    with pytest.raises(ProviderError, match="without a list of vectors"):
        build_embedder(f"tei:m@{server}/weird").embed(["a"])


@pytest.mark.django_db
def test_a_bank_on_a_local_server_retains_and_recalls_with_its_vectors(server):
    spec = f"ollama:nomic-embed-text@{server}"
    bank = Bank.objects.create(bank_id="on-ollama", embedding_provider=spec)
    for text in ("Alice drinks green tea every morning", "Bob went sailing near Paris", "Carol plays the violin"):
        assert memory_retain(bank=bank, text=text, actor="t", near_dedup=False).stored
    stored = Memory.objects.filter(bank=bank).first()
    assert stored is not None and stored.embedding_model == "ollama:nomic-embed-text" and stored.embedding_dims == 5
    hits, *_ = recall_memories(bank, "who likes the violin?", arms=("semantic",))
    assert hits[0].text == "Carol plays the violin"
    bank.refresh_from_db()
    assert bank.embedding_provider == spec
    assert get_embedder(spec) is get_embedder(spec)


@pytest.mark.django_db(transaction=True)
def test_a_server_failing_on_a_turns_context_leaves_the_retain_stored(server):
    bank = Bank.objects.create(bank_id="flaky", embedding_provider=f"tei:bge@{server}")
    start = datetime(2024, 3, 2, 10, 0, tzinfo=UTC)

    def retain(text: str, second: int) -> None:
        outcome = memory_retain(bank=bank, text=text, actor="t", metadata={"session_id": "s", "role": "user"},
                                created_at=start + timedelta(seconds=second), near_dedup=False)
        assert outcome.stored

    retain("He is shy on stairs.", 2)
    before = Memory.objects.get(bank=bank, text="He is shy on stairs.")
    # The turn before it arrives late: its own vector is made (with its context) before the write; the
    # follower's, made again after the commit with its new context, is refused by the server.
    EmbeddingServer.refuse_containing = "He is shy on stairs."
    retain("We adopted Biscuit on Saturday.", 1)  # the write stands
    reply = Memory.objects.get(bank=bank, text="He is shy on stairs.")
    assert "We adopted Biscuit" in (reply.context or "")
    assert list(reply.embedding or []) == pytest.approx(list(before.embedding or []))  # its vector stays as it was
