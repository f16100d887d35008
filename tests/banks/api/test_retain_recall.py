from __future__ import annotations

import pytest

from banks.models import AuditEvent, Memory

pytestmark = pytest.mark.django_db


def retain(api, content, **extra):
    response = api.post("/v1/retain", {"content": content, "bank_id": "user-alice", **extra})
    assert response.status_code == 200, response.content
    return response.json()


class TestRetain:
    def test_it_stores_and_returns_astrocyte_fields(self, api):
        body = retain(api, "Customer prefers dark-mode UI and weekly email digests.", tags=["ui"],
                      metadata={"customer_id": "cust_8291"}, source="support-ticket")
        assert body["stored"] is True and body["deduplicated"] is False and body["error"] is None
        assert {"stored", "memory_id", "deduplicated", "error", "retention_action", "curated",
                "memory_layer"} <= set(body)
        memory = Memory.objects.get(memory_id=body["memory_id"])
        # The caller is stamped as the author (metadata _actor), as Astrocyte does.
        assert memory.metadata.pop("_actor").startswith("token:")
        assert memory.tags == ["ui"] and memory.metadata == {"customer_id": "cust_8291"}
        assert memory.source == "support-ticket" and memory.embedding_dims == 384
        assert len(memory.memory_id) == 16
        assert AuditEvent.objects.filter(action="memory.retain", target_ids=[memory.memory_id]).exists()

    def test_exact_duplicate_returns_the_existing_id(self, api):
        first = retain(api, "Alice moved to Lisbon in March.")
        again = retain(api, "  Alice moved   to Lisbon in March. ")
        assert again["stored"] is False and again["deduplicated"] is True
        assert again["memory_id"] == first["memory_id"]
        assert Memory.objects.count() == 1

    def test_near_duplicate_is_not_stored(self, api, bank):
        bank.dedup_threshold = 0.9
        bank.save()
        first = retain(api, "The quarterly report is due on Friday the 14th of March for the finance team")
        near = retain(api, "The quarterly report is due on Friday the 14th of March for the finance team!!")
        assert near["deduplicated"] is True and near["memory_id"] == first["memory_id"]
        assert near["similarity"] >= 0.9

    def test_different_text_is_stored(self, api):
        retain(api, "Alice likes green tea.")
        other = retain(api, "Bob runs marathons every spring.")
        assert other["stored"] is True
        assert Memory.objects.count() == 2

    def test_blocked_metadata_keys_are_dropped(self, api):
        body = retain(api, "Service account rotated.", metadata={"Password": "x", "team": "ops"})
        metadata = Memory.objects.get(memory_id=body["memory_id"]).metadata
        assert {k: v for k, v in metadata.items() if k != "_actor"} == {"team": "ops"}

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"bank_id": "user-alice"}, "content"),
            ({"content": "   ", "bank_id": "user-alice"}, "content"),
            ({"content": "x", "bank_id": "user-alice", "tags": "ui"}, "tags"),
            ({"content": "x", "bank_id": "user-alice", "metadata": [1]}, "metadata"),
            ({"content": "x" * 50_001, "bank_id": "user-alice"}, "content"),
            ({"content": "x", "bank_id": "user-alice", "occurred_at": "yesterday"}, "occurred_at"),
        ],
    )
    def test_bad_input_is_a_400_naming_the_field(self, api, body, field):
        response = api.post("/v1/retain", body)
        assert response.status_code == 400
        payload = response.json()
        assert payload["error"]["code"] == "invalid_request"
        assert payload["detail"] == payload["error"]["message"]
        assert field in payload["detail"]
        assert Memory.objects.count() == 0

    def test_body_that_is_not_json_is_a_400(self, api):
        response = api.post("/v1/retain", "{not json")
        assert response.status_code == 400
        assert "detail" in response.json() and "error" in response.json()

    def test_retain_creates_a_bank_the_token_may_write(self, make_token):
        from tests.conftest import ApiClient

        client = ApiClient(make_token({"team-*": ["write", "read"]}))
        response = client.post("/v1/retain", {"content": "Deploys freeze on Fridays.", "bank_id": "team-ops"})
        assert response.status_code == 200 and response.json()["stored"] is True


class TestRecall:
    @pytest.fixture
    def memories(self, api):
        return {
            "ui": retain(api, "Customer prefers dark-mode UI and weekly email digests.", tags=["ui"])["memory_id"],
            "work": retain(api, "Alice Smith works at Acme Corp on the billing team.", tags=["work"],
                           occurred_at="2024-05-01T10:00:00Z")["memory_id"],
            "food": retain(api, "Alice is vegetarian and avoids mushrooms.", tags=["food"],
                           fact_type="experience")["memory_id"],
        }

    def test_it_finds_what_was_retained(self, api, memories):
        response = api.post("/v1/recall", {"query": "What UI theme does the customer prefer?",
                                           "bank_id": "user-alice", "max_results": 5})
        assert response.status_code == 200
        body = response.json()
        assert body["hits"][0]["memory_id"] == memories["ui"]
        assert {"hits", "total_available", "truncated", "trace", "authority_context"} <= set(body)
        hit = body["hits"][0]
        assert {"text", "score", "fact_type", "metadata", "tags", "occurred_at", "source", "memory_id",
                "bank_id", "memory_layer", "retained_at"} <= set(hit)
        trace = body["trace"]
        assert trace["fusion_method"] == "rrf"
        assert set(trace["strategy_timings_ms"]) >= {"semantic", "keyword"}
        assert trace["strategy_candidate_counts"]["keyword"] >= 1
        assert trace["layer_distribution"] == {"fact": len(body["hits"])}

    def test_scores_are_reciprocal_rank_fusion(self, api, memories):
        body = api.post("/v1/recall", {"query": "dark-mode UI", "bank_id": "user-alice"}).json()
        top = body["hits"][0]
        # Weighted RRF: the sum over the arms that found it of weight / (k + rank there).
        # The semantic arm's weight scaled by how far the bank's embedder is trusted (recall_fusion.vector_weights).
        from banks.models import Bank
        from banks.providers import bank_embedder
        from banks.recall_fusion import DEFAULT_RRF_K, RecallConfig, vector_weights

        assert top["memory_id"] == memories["ui"]
        ranks = body["trace"]["hit_ranks"][0]["arm_ranks"]
        assert len(ranks) >= 2 and ranks["semantic"] == ranks["keyword"] == 1
        embedder = bank_embedder(Bank.objects.get(bank_id="user-alice"))
        weights = vector_weights(RecallConfig(), getattr(embedder, "fusion_weight", 1.0))
        expected = sum(weights[arm] / (DEFAULT_RRF_K + rank) for arm, rank in ranks.items())
        assert top["score"] == pytest.approx(expected, abs=1e-6)

    def test_tag_filter(self, api, memories):
        body = api.post("/v1/recall", {"query": "Alice", "bank_id": "user-alice", "tags": ["food"]}).json()
        assert [h["memory_id"] for h in body["hits"]] == [memories["food"]]

    def test_fact_type_filter(self, api, memories):
        body = api.post("/v1/recall", {"query": "Alice", "bank_id": "user-alice",
                                       "fact_types": ["experience"]}).json()
        assert [h["memory_id"] for h in body["hits"]] == [memories["food"]]

    def test_time_range_filter(self, api, memories):
        body = api.post("/v1/recall", {"query": "Alice", "bank_id": "user-alice",
                                       "time_range": ["2024-01-01T00:00:00Z", "2024-12-31T00:00:00Z"]}).json()
        assert [h["memory_id"] for h in body["hits"]] == [memories["work"]]

    def test_max_results_clamps_instead_of_failing(self, api, memories):
        body = api.post("/v1/recall", {"query": "Alice", "bank_id": "user-alice", "max_results": 0}).json()
        assert len(body["hits"]) == 1
        assert api.post("/v1/recall", {"query": "Alice", "bank_id": "user-alice",
                                       "max_results": "5000"}).status_code == 200

    def test_token_budget_truncates(self, api, memories):
        body = api.post("/v1/recall", {"query": "Alice", "bank_id": "user-alice", "max_tokens": 15}).json()
        assert body["truncated"] is True
        assert len(body["hits"]) == 1

    def test_archived_memories_are_invisible(self, api, memories):
        api.post("/v1/forget", {"bank_id": "user-alice", "memory_ids": [memories["ui"]], "archive": True})
        body = api.post("/v1/recall", {"query": "dark-mode UI", "bank_id": "user-alice"}).json()
        assert memories["ui"] not in [h["memory_id"] for h in body["hits"]]

    def test_missing_bank_is_a_400(self, api):
        response = api.post("/v1/recall", {"query": "x"})
        assert response.status_code == 400
        assert "bank_id or banks is required" in response.json()["detail"]

    def test_multi_bank_parallel_tags_hits_with_their_bank(self, api_for, make_bank):
        make_bank("user-alice")
        make_bank("user-bob")
        client = api_for({"user-*": ["read", "write"]})
        client.post("/v1/retain", {"content": "Alice drinks green tea.", "bank_id": "user-alice"})
        client.post("/v1/retain", {"content": "Bob drinks black tea.", "bank_id": "user-bob"})
        body = client.post("/v1/recall", {"query": "tea", "banks": ["user-alice", "user-bob"]}).json()
        assert {h["bank_id"] for h in body["hits"]} == {"user-alice", "user-bob"}


class TestHistory:
    def test_as_of_uses_retained_at_and_sees_forgotten_rows_before_their_forget(self, api):
        from datetime import timedelta

        from django.utils import timezone

        old = retain(api, "Alice worked at Initech.")["memory_id"]
        Memory.objects.filter(memory_id=old).update(retained_at=timezone.now() - timedelta(days=30))
        new = retain(api, "Alice works at Acme now.")["memory_id"]
        api.post("/v1/forget", {"bank_id": "user-alice", "memory_ids": [old]})
        as_of = (timezone.now() - timedelta(days=10)).isoformat()
        body = api.post("/v1/history", {"query": "Alice work", "bank_id": "user-alice", "as_of": as_of}).json()
        assert [h["memory_id"] for h in body["hits"]] == [old]
        assert body["bank_id"] == "user-alice" and body["as_of"].startswith(as_of[:19])
        now = api.post("/v1/recall", {"query": "Alice work", "bank_id": "user-alice"}).json()
        assert [h["memory_id"] for h in now["hits"]] == [new]

    def test_date_only_as_of_is_accepted_and_words_are_rejected(self, api):
        assert api.post("/v1/history", {"query": "x", "bank_id": "user-alice",
                                        "as_of": "2020-01-01"}).status_code == 200
        response = api.post("/v1/history", {"query": "x", "bank_id": "user-alice", "as_of": "yesterday"})
        assert response.status_code == 400 and "as_of" in response.json()["detail"]
