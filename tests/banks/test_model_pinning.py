"""A bank's model is never switched silently: a process that cannot load it refuses writes, recalls by
keyword and says so, and pins no bank to another model in its place."""

from __future__ import annotations

import pytest

from banks.models import Bank, Memory
from banks.providers import embeddings
from banks.providers import minilm as minilm_module
from banks.services.banks import bank_update
from memoryhub.errors import ProviderUnavailable
from portability.records import MemoryRecord
from portability.services.importer import archive_import
from tests.factories import make_bank, make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def minilm_cannot_load(monkeypatch, settings):
    """This process's local model fails to load (its files missing), as after a bad install or an OOM."""
    def refuse(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        raise MemoryError("cannot allocate the model's weights")

    monkeypatch.setattr(minilm_module.MiniLMEmbedder, "__init__", refuse)
    settings.MEMORYHUB_EMBEDDINGS = "minilm"
    embeddings._cached.cache_clear()
    yield
    embeddings._cached.cache_clear()
    embeddings._FALLBACKS.clear()


@pytest.fixture
def minilm_bank():
    bank = make_bank("user-alice")
    make_memory(bank, "The lighthouse keeper logs the weather at dawn.")
    bank_update(bank=bank, actor="test", embedding_provider="minilm")
    return bank


def test_writes_to_a_bank_pinned_to_the_missing_model_are_refused_naming_it(minilm_bank, minilm_cannot_load, api):
    response = api.post("/v1/retain", {"content": "Another note about the lighthouse.", "bank_id": minilm_bank.bank_id})
    assert response.status_code == 503
    assert "all-MiniLM-L6-v2" in response.json()["detail"]
    assert Memory.objects.filter(bank=minilm_bank).count() == 1
    with pytest.raises(ProviderUnavailable, match="all-MiniLM-L6-v2"):
        archive_import(bank=minilm_bank, records=lambda: [MemoryRecord(text="An imported note.", memory_id="i1")],
                       actor="test", extract_entities=False)
    assert Memory.objects.filter(bank=minilm_bank).count() == 1


def test_recall_answers_by_keyword_and_the_trace_says_why(minilm_bank, minilm_cannot_load, make_token):
    from tests.conftest import ApiClient

    client = ApiClient(make_token({minilm_bank.bank_id: ["read"]}))
    response = client.post("/v1/recall", {"query": "lighthouse weather", "bank_id": minilm_bank.bank_id})
    assert response.status_code == 200, response.content
    body = response.json()
    assert [hit["text"] for hit in body["hits"]] == ["The lighthouse keeper logs the weather at dawn."]
    assert "all-MiniLM-L6-v2" in body["trace"]["semantic_unavailable"]
    assert "semantic" not in body["trace"]["strategies_used"]


def test_a_new_bank_is_never_pinned_to_another_model(minilm_cannot_load, make_token):
    from tests.conftest import ApiClient

    client = ApiClient(make_token({"fresh-bank": ["read", "write"]}))
    response = client.post("/v1/retain", {"content": "A first memory in a new bank.", "bank_id": "fresh-bank"})
    assert response.status_code == 503
    assert Bank.objects.filter(bank_id="fresh-bank").values_list("embedding_provider", flat=True).first() in (None, "")
    assert not Memory.objects.filter(bank__bank_id="fresh-bank").exists()
