"""Each text a request needs a vector for is embedded once: a retain's text, a recall's question, and an
auto-ingested fact (its duplicate look and its retain share one vector, banks.providers.embeddings.TextVectors)."""

from __future__ import annotations

import pytest

from agents.services.ingest import ingest_turn
from banks.models import Bank
from banks.providers import bank_embedder
from banks.selectors.recall import query_vector
from tests.conftest import ApiClient
from tests.factories import count_embed_calls


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch, bank: Bank) -> list[list[str]]:
    """Every batch of texts the bank's embedder is asked for."""
    return count_embed_calls(monkeypatch, type(bank_embedder(bank)))


@pytest.mark.django_db
def test_a_retain_embeds_its_text_once(api: ApiClient, embedded: list[list[str]]) -> None:
    response = api.post("/v1/retain", {"bank_id": "user-alice", "content": "The heron waded at dawn by the weir."})
    assert response.status_code == 200 and response.json()["stored"] is True, response.json()
    assert embedded == [["The heron waded at dawn by the weir."]]


@pytest.mark.django_db
def test_a_recall_embeds_its_question_once_and_a_repeated_question_not_again(
        api: ApiClient, embedded: list[list[str]]) -> None:
    api.post("/v1/retain", {"bank_id": "user-alice", "content": "The heron waded at dawn by the weir."})
    query_vector.cache_clear()
    embedded.clear()
    for _ in range(2):
        response = api.post("/v1/recall", {"bank_id": "user-alice", "query": "where did the heron wade?"})
        assert response.status_code == 200 and response.json()["hits"], response.json()
    assert embedded == [["where did the heron wade?"]]


@pytest.mark.django_db
def test_an_ingested_fact_is_embedded_once_for_its_duplicate_look_and_its_retain(
        bank: Bank, embedded: list[list[str]]) -> None:
    bank.config = {"auto_ingest": {"importance_threshold": 0.0}}
    bank.save(update_fields=["config"])
    outcome = ingest_turn(bank=bank, actor="test", assistant_message="",
                          user_message="I love hiking in the mountains! I work at Acme as a data engineer. "
                                       "I always want answers in Portuguese.")
    assert len(outcome.stored) == 3
    texts = [text for call in embedded for text in call]
    assert len(texts) == len(set(texts)) == 3, embedded
