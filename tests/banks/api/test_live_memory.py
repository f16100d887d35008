from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from banks.models import Memory, ObservationEvidence

pytestmark = pytest.mark.django_db

BANK = {"bank_id": "user-alice"}


def retain(api, text, **extra):
    return api.post("/v1/retain", {**BANK, "content": text, **extra}).json()["memory_id"]


class TestDirectives:
    def test_directives_come_first_in_recall_and_reflect(self, api):
        retain(api, "Alice uses Go for web services.")
        directive = api.post("/v1/directives", {**BANK, "rule_text": "Always recommend Python over Go for "
                                                                    "data-science tasks."}).json()
        assert directive["kind"] == "directive" and directive["model_id"].startswith("directive:")
        assert directive["structured_doc"]["sections"][0]["id"] == "rule"
        recall = api.post("/v1/recall", {**BANK, "query": "Which language for web services?"}).json()
        assert recall["hits"][0]["layer"] == "directive"
        assert recall["hits"][0]["text"].startswith("Always recommend Python")
        assert recall["trace"]["layer_distribution"] == {"directive": 1, "fact": 1}
        off = api.post("/v1/recall", {**BANK, "query": "web services", "include_directives": False}).json()
        assert all(h["layer"] != "directive" for h in off["hits"])
        reflect = api.post("/v1/reflect", {**BANK, "query": "Which language should Alice use?"}).json()
        assert reflect["directives"] == ["Always recommend Python over Go for data-science tasks."]

    def test_deactivate_update_delete(self, api):
        made = api.post("/v1/directives", {**BANK, "rule_text": "Never store card numbers.",
                                           "directive_id": "no-cards"}).json()
        assert made["model_id"] == "no-cards"
        assert api.post("/v1/directives/no-cards/deactivate", BANK).json()["is_active"] is False
        recall = api.post("/v1/recall", {**BANK, "query": "cards"}).json()
        assert all(h["layer"] != "directive" for h in recall["hits"])
        edited = api.patch("/v1/directives/no-cards", {**BANK, "rule_text": "Never store full card numbers.",
                                                       "is_active": True}).json()
        assert edited["rule_text"] == "Never store full card numbers." and edited["revision"] == 2
        listed = api.get("/v1/directives", BANK).json()["directives"]
        assert [d["model_id"] for d in listed] == ["no-cards"]
        assert api.delete("/v1/directives/no-cards", BANK).json() == {"deleted": True}
        assert api.post("/v1/directives", {**BANK, "rule_text": "  "}).status_code == 400

    def test_tag_scoped_directive_applies_only_to_that_tag(self, api):
        api.post("/v1/directives", {**BANK, "rule_text": "Mention the on-call rota.", "scope": "tag:ops"})
        retain(api, "Deploys happen on Tuesdays.", tags=["ops"])
        plain = api.post("/v1/recall", {**BANK, "query": "deploys"}).json()
        assert all(h["layer"] != "directive" for h in plain["hits"])
        tagged = api.post("/v1/recall", {**BANK, "query": "deploys", "tags": ["ops"]}).json()
        assert tagged["hits"][0]["layer"] == "directive"


class TestObservations:
    def test_create_list_get_update_delete(self, api):
        m1 = retain(api, "Alice skipped the Monday stand-up.")
        m2 = retain(api, "Alice asked for written status updates.")
        created = api.post("/v1/observations", {**BANK, "text": "Prefers async stand-ups over live meetings.",
                                                "evidence": [m1, m2], "scope": "bank"}).json()
        assert set(created) >= {"id", "text", "trend", "proof_count", "source_ids", "confidence", "updated_at",
                                "scope"}
        assert created["trend"] == "new" and created["source_ids"] == [m1, m2] and created["proof_count"] == 1
        oid = created["id"]
        assert api.get(f"/v1/observations/{oid}", BANK).json()["id"] == oid
        assert [o["id"] for o in api.get("/v1/observations", {**BANK, "trend": "new"}).json()["observations"]] == [oid]
        assert api.get("/v1/observations", {**BANK, "trend": "stale"}).json()["observations"] == []
        m3 = retain(api, "Alice cancelled the planning call.")
        updated = api.patch(f"/v1/observations/{oid}", {**BANK, "add_source_ids": [m3], "confidence": 0.95}).json()
        assert updated["proof_count"] == 2 and updated["confidence"] == 0.95 and m3 in updated["source_ids"]
        assert api.delete(f"/v1/observations/{oid}", BANK).json() == {"deleted": True}
        assert api.get(f"/v1/observations/{oid}", BANK).status_code == 404

    def test_trend_comes_from_evidence_times(self, api):
        old = retain(api, "Alice went climbing.", occurred_at=(timezone.now() - timedelta(days=60)).isoformat())
        new = retain(api, "Alice went climbing again.")
        newer = retain(api, "Alice bought climbing shoes.")
        oid = api.post("/v1/observations", {**BANK, "text": "Alice climbs.", "source_ids": [old, new, newer]}).json()
        assert oid["trend"] == "strengthening"  # 2 recent / 30 days against 1 older / 60 days

    def test_low_confidence_and_empty_text_are_400(self, api):
        assert api.post("/v1/observations", {**BANK, "text": "x", "confidence": 0.2}).status_code == 400
        response = api.post("/v1/observations", {**BANK, "text": " "})
        assert response.status_code == 400 and "text" in response.json()["detail"]

    def test_forgetting_or_editing_a_source_invalidates(self, api):
        m1 = retain(api, "Alice drinks green tea.")
        m2 = retain(api, "Alice orders matcha.")
        a = api.post("/v1/observations", {**BANK, "text": "Likes tea.", "source_ids": [m1]}).json()["id"]
        b = api.post("/v1/observations", {**BANK, "text": "Likes matcha.", "source_ids": [m2]}).json()["id"]
        api.post("/v1/forget", {**BANK, "memory_ids": [m1]})
        from banks.services.memory_edit import memory_update

        memory_update(memory=Memory.objects.get(memory_id=m2), actor="test", text="Alice orders hojicha.")
        live = api.get("/v1/observations", BANK).json()["observations"]
        assert live == []
        everything = api.get("/v1/observations", {**BANK, "include_invalidated": True}).json()["observations"]
        assert {o["id"] for o in everything} == {a, b} and all(o["invalidated_at"] for o in everything)

    def test_invalidate_endpoint(self, api):
        m1 = retain(api, "Alice likes jazz.")
        api.post("/v1/observations", {**BANK, "text": "Jazz fan.", "source_ids": [m1]})
        assert api.post("/v1/observations/invalidate", {**BANK, "source_ids": [m1]}).json() == {"deleted": 1}
        assert api.post("/v1/observations/invalidate", {**BANK, "source_ids": [m1]}).json() == {"deleted": 0}

    def test_observations_layer_in_recall(self, api):
        m1 = retain(api, "Alice skipped the Monday stand-up.")
        api.post("/v1/observations", {**BANK, "text": "Alice avoids stand-up meetings.", "source_ids": [m1]})
        body = api.post("/v1/recall", {**BANK, "query": "stand-up meetings", "include_observations": True}).json()
        layers = [h["layer"] for h in body["hits"]]
        assert layers[0] == "observation" and "fact" in layers
        assert body["trace"]["layer_distribution"]["observation"] == 1


class TestReflectAuditCompileGraph:
    def test_reflect_answers_and_cites(self, api):
        m = retain(api, "The customer prefers dark-mode UI and weekly email digests.")
        retain(api, "Bob sails in Greece every summer.")
        body = api.post("/v1/reflect", {**BANK, "query": "What are this customer's communication preferences?",
                                        "max_tokens": 200, "include_sources": True}).json()
        assert set(body) >= {"answer", "confidence", "sources", "observations", "authority_context"}
        assert "dark-mode" in body["answer"]
        assert body["sources"][0]["memory_id"] == m, body
        without = api.post("/v1/reflect", {**BANK, "query": "customer", "include_sources": False}).json()
        assert without["sources"] is None

    def test_audit_reports_gaps_by_severity(self, api):
        retain(api, "Refund requests are answered within two days.")
        retain(api, "Refund escalations go to the billing lead.")
        body = api.post("/v1/audit", {**BANK, "scope": "refunds escalations chargebacks", "max_memories": 50}).json()
        assert set(body) >= {"scope", "bank_id", "gaps", "coverage_score", "memories_scanned", "trace"}
        assert body["memories_scanned"] == 2
        assert body["gaps"][0] == {"topic": "chargebacks", "severity": "high",
                                   "reason": "No memory mentions 'chargebacks'."}
        assert 0 < body["coverage_score"] < 1

    def test_compile_builds_pages_per_tag(self, api):
        retain(api, "Deploys run on Tuesdays.", tags=["deploy"])
        retain(api, "Deploys need a green build.", tags=["deploy"])
        retain(api, "Lunch is at noon.", tags=["misc"])
        body = api.post("/v1/compile", BANK).json()
        assert body["scopes_compiled"] == ["deploy"] and body["pages_created"] == 1
        again = api.post("/v1/compile", {**BANK, "scope": "deploy"}).json()
        assert again["pages_updated"] == 1 and again["error"] is None

    def test_graph_search_and_neighbors(self, api):
        retain(api, "Alice Smith works with Bob Jones on Project Atlas.")
        retain(api, "Bob Jones manages the Lisbon office.")
        retain(api, "Carol Diaz likes tea.", entities=[{"name": "Carol Diaz", "entity_type": "PERSON"}])
        entities = api.post("/v1/graph/search", {**BANK, "query": "Alice Smith"}).json()["entities"]
        assert entities[0]["name"] == "Alice Smith"
        assert set(entities[0]) == {"id", "name", "entity_type", "aliases", "metadata", "embedding", "mention_count"}
        hits = api.post("/v1/graph/neighbors", {**BANK, "entity_ids": [entities[0]["id"]], "max_depth": 2}).json()
        texts = [h["text"] for h in hits["hits"]]
        assert texts[0].startswith("Alice Smith") and any("Lisbon" in t for t in texts)
        assert hits["hits"][0]["depth"] == 0
        assert api.post("/v1/graph/search", {**BANK, "query": "Carol"}).json()["entities"][0]["entity_type"] == "PERSON"


class TestBanks:
    def test_crud_with_guarded_delete(self, api_for):
        admin = api_for({"team-*": ["*"]})
        made = admin.post("/v1/banks", {"bank_id": "team-ops", "name": "Ops"}).json()
        assert made["bank_id"] == "team-ops"
        assert admin.post("/v1/banks", {"bank_id": "team-ops"}).status_code == 409
        assert admin.post("/v1/banks", {"bank_id": "bad bank"}).status_code in (400, 403)
        assert [b["bank_id"] for b in admin.get("/v1/banks").json()["banks"]] == ["team-ops"]
        assert admin.patch("/v1/banks/team-ops", {"dedup_threshold": 0.9}).json()["dedup_threshold"] == 0.9
        assert admin.get("/v1/banks/team-ops").json()["counts"]["memories"] == 0
        refused = admin.delete("/v1/banks/team-ops")
        assert refused.status_code == 400 and "confirm" in refused.json()["detail"]
        assert admin.delete("/v1/banks/team-ops", {"confirm": "team-ops"}).json()["deleted"] is True
        assert admin.get("/v1/banks/team-ops").status_code == 404
        reader = api_for({"team-*": ["read"]})
        assert reader.post("/v1/banks", {"bank_id": "team-x"}).status_code == 403


def test_consolidation_groups_related_memories(api):
    from banks.services.consolidation import observations_consolidate

    for text in ("Alice drinks green tea every morning.", "Alice drinks green tea every afternoon.",
                 "Bob repairs old bicycles.", "Bob repairs old motorbikes."):
        retain(api, text)
    from banks.models import Bank

    outcome = observations_consolidate(bank=Bank.objects.get(bank_id="user-alice"), actor="test")
    assert outcome.clusters == 2 and outcome.created == 2
    assert ObservationEvidence.objects.count() == 4
    again = observations_consolidate(bank=Bank.objects.get(bank_id="user-alice"), actor="test")
    assert again.memories_scanned == 0
