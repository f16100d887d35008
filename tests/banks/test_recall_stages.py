"""The optional recall stages against small local servers: a ``/rerank`` endpoint (Cohere/Jina and
TEI shapes) and a chat-completions endpoint for query expansion. Each stage says in the trace what
it changed, and a stage that fails or times out leaves recall answering without it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache

from banks.models import BankMembership
from banks.providers import rerank as rerank_module
from banks.providers.base import ProviderError
from banks.providers.rerank import HttpReranker, build_reranker, parse_rerank_body
from banks.recall_fusion import RecallConfig
from banks.selectors.recall import recall_memories
from banks.selectors.recall_expand import clean_terms
from banks.services.memories import memory_retain
from tests.fakes import JsonHandler, local_server

pytestmark = pytest.mark.django_db


class Fake(JsonHandler):
    delay = 0.0
    status = 200
    shape = "cohere"
    terms: list[str] = []
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.read_json()
        Fake.requests.append({"path": self.path, "body": body})
        time.sleep(Fake.delay)
        payload: Any
        if self.path.endswith("/rerank"):
            # Relevance: the document that mentions "violin" wins, then by shortness.
            scores = [(1.0 if "violin" in d.lower() else 0.0) + 1.0 / (1 + len(d)) for d in body["documents"]]
            results = sorted(({"index": i, "score": s} for i, s in enumerate(scores)), key=lambda r: -r["score"])
            if Fake.shape == "cohere":
                payload = {"results": [{"index": r["index"], "relevance_score": r["score"]} for r in results]}
            else:
                payload = results
        else:
            payload = {"choices": [{"message": {"content": json.dumps({"terms": Fake.terms})}}]}
        self.send_json(payload, Fake.status)


@pytest.fixture
def server() -> Iterator[str]:
    Fake.delay, Fake.status, Fake.shape, Fake.terms, Fake.requests = 0.0, 200, "cohere", [], []
    with local_server(Fake) as url:
        yield url


@pytest.fixture
def reranking(settings, server):  # noqa: ANN001, ANN201
    settings.MEMORYHUB_RERANK = "http:tiny-reranker"
    settings.MEMORYHUB_RERANK_URL = f"{server}/rerank"
    settings.MEMORYHUB_RERANK_TIMEOUT = 0.5
    rerank_module._cached.cache_clear()
    yield server
    rerank_module._cached.cache_clear()


@pytest.fixture
def music(bank):  # noqa: ANN001, ANN201
    for text in ("Alice plays music every evening with her string quartet.",
                 "Alice's music teacher lent her a violin.",
                 "Bob listens to music on the train.",
                 "The quartet plays music by Haydn."):
        memory_retain(bank=bank, text=text, actor="test")
    return bank


def _recall(bank, query: str, **settings: Any):  # noqa: ANN001, ANN202
    return recall_memories(bank, query, max_results=3, config=RecallConfig.from_settings(settings))


def test_rerank_reorders_and_the_trace_says_which_stage_moved_what(reranking, music, api):
    hits, _, trace, _ = _recall(music, "what does Alice play music with", rerank=True)
    assert hits[0].text == "Alice's music teacher lent her a violin."
    assert hits[0].rerank_rank == 1 and hits[0].fused_rank != 1
    assert trace.rerank["status"] == "ok" and trace.rerank["provider"] == "http:tiny-reranker"
    assert trace.rerank["moved"] >= 1 and "rerank" in trace.strategy_timings_ms
    request = Fake.requests[-1]["body"]
    assert request["query"] == "what does Alice play music with" and request["model"] == "tiny-reranker"
    assert len(request["documents"]) == 4  # every fused candidate, up to the rerank depth
    # The API carries the same per-hit ranks.
    music.config = {"recall": {"rerank": True}}
    music.save(update_fields=["config"])
    body = api.post("/v1/recall", {"query": "what does Alice play music with", "bank_id": music.bank_id}).json()
    first = body["trace"]["hit_ranks"][0]
    assert first["rerank_rank"] == 1 and first["fused_rank"] > 1 and first["rerank_score"] > 1
    assert body["trace"]["rerank"]["status"] == "ok"
    assert body["hits"][0]["text"] == "Alice's music teacher lent her a violin."


def test_tei_shape_is_understood(reranking, music):
    Fake.shape = "tei"
    hits, _, trace, _ = _recall(music, "what does Alice play music with", rerank=True)
    assert trace.rerank["status"] == "ok" and hits[0].text == "Alice's music teacher lent her a violin."


@pytest.mark.parametrize("failure", ["timeout", "http-500", "down"])
def test_a_failing_reranker_leaves_the_fused_order_with_a_note(reranking, music, api, failure, settings):
    plain, *_ = _recall(music, "what does Alice play music with")
    if failure == "timeout":
        Fake.delay = 1.5
    elif failure == "http-500":
        Fake.status = 500
    else:
        settings.MEMORYHUB_RERANK_URL = "http://127.0.0.1:9/rerank"
        rerank_module._cached.cache_clear()
    hits, _, trace, _ = _recall(music, "what does Alice play music with", rerank=True)
    assert [h.memory_id for h in hits] == [h.memory_id for h in plain]
    assert trace.rerank["status"] == "failed" and "kept the fused order" in trace.rerank["note"]
    assert all(h.rerank_rank is None for h in hits)
    music.config = {"recall": {"rerank": True}}
    music.save(update_fields=["config"])
    response = api.post("/v1/recall", {"query": "what does Alice play music with", "bank_id": music.bank_id})
    assert response.status_code == 200 and response.json()["trace"]["rerank"]["status"] == "failed"


def test_rerank_is_off_by_default_and_skipped_without_a_reranker(music, settings):
    rerank_module._cached.cache_clear()
    _, _, trace, _ = _recall(music, "violin")
    assert trace.rerank is None
    settings.MEMORYHUB_RERANK = "none"
    _, _, trace, _ = _recall(music, "violin", rerank={"enabled": True, "candidates": 10})
    assert trace.rerank["status"] == "skipped"


def test_rerank_settings_and_bodies_are_checked(settings):
    assert RecallConfig.from_settings({"rerank": {"enabled": True, "candidates": 7}}).rerank_depth == 7
    assert RecallConfig.from_settings({"rerank": "yes"}).rerank is False
    assert build_reranker("none") is None
    settings.MEMORYHUB_RERANK_URL = ""
    with pytest.raises(ProviderError, match="MEMORYHUB_RERANK_URL"):
        build_reranker("http")
    with pytest.raises(ProviderError, match="Unknown reranker"):
        build_reranker("magic")
    assert parse_rerank_body("p", {"results": [{"index": 1, "relevance_score": 0.2},
                                               {"index": 0, "relevance_score": 0.9}]}, 2) == [0.9, 0.2]
    with pytest.raises(ProviderError, match="scored 1 of 2"):
        parse_rerank_body("p", [{"index": 0, "score": 1.0}], 2)
    with pytest.raises(ProviderError):
        parse_rerank_body("p", {"results": [{"index": 5, "score": 1.0}]}, 2)
    assert HttpReranker(url="http://127.0.0.1:9/rerank").score("q", []) == []


@pytest.fixture
def expanding(settings, server):  # noqa: ANN001, ANN201
    settings.MEMORYHUB_LLM = "openai:tiny-chat"
    settings.MEMORYHUB_LLM_URL = f"{server}/v1"
    settings.MEMORYHUB_EXPAND_TIMEOUT = 0.5
    cache.clear()
    return server


def _expansions() -> list[str]:
    """The questions the chat model was asked to expand (retains ask it for entities too)."""
    return [r["body"]["messages"][-1]["content"] for r in Fake.requests
            if r["path"].endswith("/chat/completions") and "search terms" in r["body"]["messages"][0]["content"]]


def test_expansion_feeds_the_keyword_arm_and_the_trace_lists_the_terms(expanding, music, api):
    Fake.terms = ["violin", "instrument", "music", "  "]
    plain, *_ = recall_memories(music, "which fiddle", arms=("keyword",), max_results=3)
    assert plain == []
    hits, _, trace, _ = recall_memories(music, "which fiddle", arms=("keyword",), max_results=3,
                                        config=RecallConfig.from_settings({"arms": ["keyword"], "expand": True}))
    assert hits[0].text == "Alice's music teacher lent her a violin."
    assert trace.expansion["status"] == "ok" and trace.expansion["terms"] == ["violin", "instrument", "music"]
    assert _expansions() == ["which fiddle"]
    # Asked again: the terms come from the cache.
    _, _, again, _ = recall_memories(music, "which fiddle", arms=("keyword",),
                                     config=RecallConfig.from_settings({"arms": ["keyword"], "expand": True}))
    assert again.expansion["cached"] is True and _expansions() == ["which fiddle"]
    # The graph arm finds the question's entities locally: a recall asks the model nothing else.
    asked = len(Fake.requests)
    recall_memories(music, "What does Alice play?")
    assert len(Fake.requests) == asked
    music.config = {"recall": {"expand": True}}
    music.save(update_fields=["config"])
    body = api.post("/v1/recall", {"query": "which fiddle", "bank_id": music.bank_id}).json()
    assert body["trace"]["expansion"]["terms"] == ["violin", "instrument", "music"]


def test_a_slow_or_broken_model_leaves_the_question_alone(expanding, music, api):
    Fake.terms = ["violin"]
    Fake.delay = 1.5
    hits, _, trace, _ = recall_memories(music, "which fiddle", arms=("keyword",),
                                        config=RecallConfig.from_settings({"arms": ["keyword"], "expand": True}))
    assert hits == [] and trace.expansion["status"] == "failed" and "question alone" in trace.expansion["note"]
    Fake.delay, Fake.status = 0.0, 500
    music.config = {"recall": {"expand": True}}
    music.save(update_fields=["config"])
    response = api.post("/v1/recall", {"query": "which fiddle", "bank_id": music.bank_id})
    assert response.status_code == 200 and response.json()["trace"]["expansion"]["status"] == "failed"


def test_expansion_without_a_chat_model_is_skipped(music, settings):
    settings.MEMORYHUB_LLM = "extractive"
    _, _, trace, _ = recall_memories(music, "fiddle", config=RecallConfig.from_settings({"expand": True}))
    assert trace.expansion["status"] == "skipped"


def test_clean_terms_keeps_new_short_distinct_words():
    assert clean_terms("my phone", ["phone", "iPhone 15", "iphone 15", "x" * 100, "mobile", "", "cell"]) == \
        ["iPhone 15", "x" * 60, "mobile", "cell"]


def test_the_playground_shows_the_rerank_column(reranking, music, operator, operator_client):
    BankMembership.objects.create(user=operator, bank=music, role="viewer")
    page = operator_client.get(f"/banks/{music.bank_id}/recall/", {"q": "what does Alice play music with",
                                                                   "a_arms": ["semantic", "keyword"],
                                                                   "a_rerank": "1"})
    html = page.content.decode()
    assert page.status_code == 200
    assert "Rerank (ok, http:tiny-reranker)" in html and '<th title="rank the reranker gave">rerank</th>' in html
    assert "(was " in html and "keyword language english" in html
