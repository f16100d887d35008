"""Side by side with Astrocyte's gateway: the documented request bodies (seed 001 curl calls and
the measured shapes of Astrocyte 0.22) must get the same status codes and response keys here."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

RETAIN_RESULT = {"stored", "memory_id", "deduplicated", "error", "retention_action", "curated", "memory_layer"}
RECALL_RESULT = {"hits", "total_available", "truncated", "trace", "authority_context", "top_semantic_score"}
MEMORY_HIT = {"text", "score", "fact_type", "metadata", "tags", "occurred_at", "source", "memory_id", "bank_id",
              "memory_layer", "utility_score", "retained_at", "chunk_id"}
RECALL_TRACE = {"strategies_used", "total_candidates", "fusion_method", "latency_ms", "strategy_timings_ms",
                "strategy_candidate_counts", "tier_used", "layer_distribution", "cache_hit", "wiki_tier_used"}
# What our trace adds (per-hit arm ranks, the time window a question named).
OUR_TRACE = {"hit_ranks", "time_window"}
MENTAL_MODEL = {"model_id", "bank_id", "title", "content", "scope", "source_ids", "revision", "refreshed_at", "kind",
                "structured_doc", "source_timestamps"}
ENTITY = {"id", "name", "entity_type", "aliases", "metadata", "embedding", "mention_count"}
GRAPH_HIT = {"memory_id", "text", "connected_entities", "depth", "score"}


@pytest.fixture
def client(api_for, make_bank):
    for bank_id in ("user-prefs", "incidents", "runbooks", "team-notes", "support-acme", "engineering",
                    "user-alice", "people"):
        make_bank(bank_id)
    return api_for({"*": ["read", "write", "forget", "admin"]})


def test_seed_curl_calls(client):
    retained = client.post("/v1/retain", {
        "content": "Customer prefers dark-mode UI and weekly email digests.", "bank_id": "user-prefs",
        "tags": ["ui", "notifications"], "metadata": {"customer_id": "cust_8291"}})
    assert retained.status_code == 200 and RETAIN_RESULT <= set(retained.json())
    memory_id = retained.json()["memory_id"]

    recall = client.post("/v1/recall", {"query": "What UI theme does the customer prefer?",
                                        "bank_id": "user-prefs", "max_results": 5})
    assert recall.status_code == 200
    body = recall.json()
    assert RECALL_RESULT <= set(body) and MEMORY_HIT <= set(body["hits"][0]) and set(body["trace"]) == RECALL_TRACE | OUR_TRACE

    debug = client.post("/v1/debug/recall", {"query": "UI theme", "bank_id": "user-prefs"})
    assert debug.status_code == 200 and set(debug.json()) == {"trace", "result_count"}
    assert debug.json()["result_count"] == 1 and set(debug.json()["trace"]) == RECALL_TRACE | OUR_TRACE

    for bank_id, text in (("incidents", "The deployment failed last week after a schema migration."),
                          ("runbooks", "Roll back a failed deployment with the release tool."),
                          ("team-notes", "Lunch order for Friday: pizza.")):
        assert client.post("/v1/retain", {"content": text, "bank_id": bank_id}).json()["stored"] is True
    multi = client.post("/v1/recall", {"query": "deployment issues last week",
                                       "banks": ["incidents", "runbooks", "team-notes"], "strategy": "parallel",
                                       "max_results": 20})
    assert multi.status_code == 200 and RECALL_RESULT <= set(multi.json())
    found = {(hit["bank_id"], hit["text"]) for hit in multi.json()["hits"]}
    assert ("incidents", "The deployment failed last week after a schema migration.") in found
    assert ("runbooks", "Roll back a failed deployment with the release tool.") in found
    assert all(MEMORY_HIT <= set(hit) for hit in multi.json()["hits"])

    history = client.post("/v1/history", {"query": "What did we know about Alice's employer?",
                                          "bank_id": "user-alice", "as_of": "2025-01-01T00:00:00Z"})
    assert history.status_code == 200
    assert set(history.json()) >= {"hits", "total_available", "truncated", "as_of", "bank_id", "trace"}
    assert history.json()["as_of"] == "2025-01-01T00:00:00+00:00"

    audit = client.post("/v1/audit", {"scope": "customer support tickets and resolutions for ACME Corp",
                                      "bank_id": "support-acme", "max_memories": 50})
    assert audit.status_code == 200
    assert set(audit.json()) >= {"scope", "bank_id", "gaps", "coverage_score", "memories_scanned", "trace"}

    reflect = client.post("/v1/reflect", {"query": "What are this customer's communication preferences?",
                                          "bank_id": "user-prefs", "max_tokens": 200, "include_sources": True})
    assert reflect.status_code == 200
    assert set(reflect.json()) >= {"answer", "confidence", "sources", "observations", "authority_context"}
    assert MEMORY_HIT <= set(reflect.json()["sources"][0])

    compiled = client.post("/v1/compile", {"bank_id": "engineering", "scope": "deployment"})
    assert compiled.status_code == 200
    assert set(compiled.json()) == {"bank_id", "scopes_compiled", "pages_created", "pages_updated",
                                    "noise_memories", "tokens_used", "elapsed_ms", "error"}

    created = client.post("/v1/mental-models", {
        "bank_id": "user-alice", "model_id": "preferences-v1", "title": "Alice's preferences",
        "content": "Alice prefers async communication, dark mode, and Python over Go.", "scope": "bank",
        "source_ids": ["mem-1", "mem-2", "mem-3"]})
    assert created.status_code == 200 and MENTAL_MODEL <= set(created.json())
    listed = client.get("/v1/mental-models", {"bank_id": "user-alice", "scope": "tag:preferences"})
    assert listed.status_code == 200 and listed.json() == {"models": []}
    got = client.get("/v1/mental-models/preferences-v1", {"bank_id": "user-alice"})
    assert got.status_code == 200 and MENTAL_MODEL <= set(got.json())
    refreshed = client.post("/v1/mental-models/preferences-v1/refresh", {
        "bank_id": "user-alice", "content": "Updated: Alice now prefers Slack over email.",
        "source_ids": ["mem-7", "mem-8"]})
    assert refreshed.status_code == 200 and refreshed.json()["revision"] == 2
    assert client.delete("/v1/mental-models/preferences-v1", {"bank_id": "user-alice"}).json() == {"deleted": True}
    invalidated = client.post("/v1/observations/invalidate", {"bank_id": "user-alice",
                                                              "source_ids": ["mem-1", "mem-2"]})
    assert invalidated.status_code == 200 and invalidated.json() == {"deleted": 0}

    client.post("/v1/retain", {"content": "Alice Smith (formerly Alice Johnson) joined the platform team.",
                               "bank_id": "people"})
    search = client.post("/v1/graph/search", {"query": "Alice", "bank_id": "people", "limit": 5})
    assert search.status_code == 200 and ENTITY == set(search.json()["entities"][0])
    neighbors = client.post("/v1/graph/neighbors", {"entity_ids": ["person:alice-smith"], "bank_id": "people",
                                                    "max_depth": 2, "limit": 20})
    assert neighbors.status_code == 200 and set(neighbors.json()) == {"hits"}
    by_name = client.post("/v1/graph/neighbors", {"entity_ids": [search.json()["entities"][0]["id"]],
                                                  "bank_id": "people"})
    assert GRAPH_HIT == set(by_name.json()["hits"][0])

    forget = client.post("/v1/forget", {"bank_id": "user-prefs", "memory_ids": [memory_id, "mem_91cb"]})
    assert forget.status_code == 200 and forget.json() == {"deleted_count": 1, "archived_count": 0}
    by_tag = client.post("/v1/forget", {"bank_id": "user-prefs", "tags": ["deprecated"]})
    assert by_tag.status_code == 200 and set(by_tag.json()) == {"deleted_count", "archived_count"}


@pytest.mark.parametrize(
    ("path", "body", "status", "detail"),
    [
        ("/v1/retain", {"bank_id": "user-prefs"}, 400, "content: Field required"),
        ("/v1/recall", {"query": "x"}, 400, "Value error, bank_id or banks is required"),
        ("/v1/history", {"query": "x", "bank_id": "user-alice", "as_of": "yesterday"}, 400, "as_of: "),
        ("/v1/recall", [1, 2], 400, "JSON object"),
        ("/v1/mental-models/nope/refresh", {"bank_id": "user-alice", "content": "x"}, 404, "mental model not found"),
        ("/v1/recall", {"query": "x", "bank_id": "user-prefs", "strategy": "best"}, 400, "strategy"),
    ],
)
def test_error_statuses_and_details_match(client, path, body, status, detail):
    response = client.post(path, body)
    assert response.status_code == status
    assert detail in response.json()["detail"]


def test_unknown_keys_are_ignored_and_numbers_in_strings_are_read(client):
    for n in range(7):
        stored = client.post("/v1/retain", {"content": f"Release {n} shipped on day {n * 3}.",
                                            "bank_id": "user-prefs", "foo": {"bar": 1}})
        assert stored.status_code == 200 and stored.json()["stored"] is True
    response = client.post("/v1/recall", {"query": "release shipped", "bank_id": "user-prefs", "max_results": "5",
                                          "foo": 1})
    assert response.status_code == 200
    body = response.json()
    assert RECALL_RESULT <= set(body) and len(body["hits"]) == 5 and body["total_available"] >= 7
    assert all(hit["bank_id"] == "user-prefs" and "Release" in hit["text"] for hit in body["hits"])


def test_unknown_route_is_404_not_found(client):
    response = client.post("/v1/nowhere", {})
    assert response.status_code == 404 and response.json()["detail"] == "Not Found"


def test_responses_match_their_documented_models(client):
    """The bodies the views build validate against the response models the OpenAPI document publishes."""
    from banks.api import responses as out

    retained = client.post("/v1/retain", {"content": "Alice likes jazz.", "bank_id": "user-prefs"}).json()
    out.RetainResult.model_validate(retained)
    out.RecallResult.model_validate(client.post("/v1/recall", {"query": "jazz", "bank_id": "user-prefs"}).json())
    out.ReflectResult.model_validate(client.post("/v1/reflect", {"query": "jazz", "bank_id": "user-prefs"}).json())
    out.AuditResult.model_validate(client.post("/v1/audit", {"scope": "music", "bank_id": "user-prefs"}).json())
    created = client.post("/v1/mental-models", {"bank_id": "user-prefs", "model_id": "m", "title": "T",
                                                "content": "x"}).json()
    out.MentalModel.model_validate(created)
    out.ObservationList.model_validate(client.get("/v1/observations", {"bank_id": "user-prefs"}).json())
    out.ForgetResult.model_validate(client.post("/v1/forget", {"bank_id": "user-prefs",
                                                               "memory_ids": [retained["memory_id"]]}).json())
