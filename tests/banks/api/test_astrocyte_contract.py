"""Side by side with Astrocyte's gateway: the documented request bodies (seed 001 curl calls and
the measured shapes of Astrocyte 0.22) must get the same status codes and response keys here."""

from __future__ import annotations

import pytest

from tests.portability.fixtures import bank_folder

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


# --- Every route of Astrocyte's endpoint catalogue, table-driven --------------------------------------------------

B = "user-alice"
T = "acme:decisions"  # a tenant bank: Astrocyte's tenants are bank-id prefixes ("acme:")
LIVE = {"status"}
HEALTH = {"healthy", "message", "latency_ms", "last_check_at"}
INGEST = {"status", "aggregate", "sources"}
REFLECT_RESULT = {"answer", "confidence", "sources", "observations", "authority_context"}
FORGET_RESULT = {"deleted_count", "archived_count"}
DSAR = {"tenant_id", "principal", "tag_convention", "banks_processed", "memories_deleted", "details"}
HISTORY_RESULT = {"hits", "total_available", "truncated", "as_of", "bank_id", "trace"}
AUDIT_RESULT = {"scope", "bank_id", "gaps", "coverage_score", "memories_scanned", "trace"}
COMPILE_RESULT = {"bank_id", "scopes_compiled", "pages_created", "pages_updated", "noise_memories", "tokens_used",
                  "elapsed_ms", "error"}
WEBHOOK = {"ok", "error", "stored", "memory_id", "deduplicated", "retain_error"}
LIFECYCLE = {"archived_count", "deleted_count", "skipped_count", "actions"}
BANK_HEALTH = {"bank_id", "score", "status", "issues", "metrics", "assessed_at"}
HEALTH_METRICS = {"recall_hit_rate", "avg_recall_score", "dedup_rate", "reflect_success_rate", "avg_content_length",
                  "recall_to_retain_ratio", "retain_count", "recall_count", "reflect_count", "memory_count"}
LEGAL_HOLD = {"hold_id", "bank_id", "reason", "set_at", "set_by"}
STORAGE = {"tenant_id", "schema", "bytes_used", "measured_at", "snapshot_age_seconds", "breakdown"}
STORAGE_BREAKDOWN = {"heap_bytes", "index_bytes", "table_count", "memory_count", "last_write_at"}
MEMORY_CHANGE = {"id", "bank_id", "changed_at", "deleted", "text", "occurred_at", "retained_at", "tags", "fact_type",
                 "memory_layer", "metadata"}
SECRET = "contract-secret"

# id, method, path, payload (JSON body, or query for GET/DELETE), status, documented keys, {where: keys} inside
CATALOGUE = [
    ("live", "get", "/live", {}, 200, LIVE, {}),
    ("health-live", "get", "/health/live", {}, 200, LIVE, {}),
    ("health", "get", "/health", {}, 200, HEALTH, {}),
    ("health-ingest", "get", "/health/ingest", {}, 200, INGEST,
     {"aggregate": {"healthy", "message"}, "sources.0": {"id", "healthy", "message"}}),
    ("retain", "post", "/v1/retain", {"content": "Alice prefers tea.", "bank_id": B, "tags": ["drinks"],
                                      "metadata": {"k": "v"}, "occurred_at": "2026-01-02T03:04:05",
                                      "source": "chat"}, 200, RETAIN_RESULT, {}),
    ("recall", "post", "/v1/recall", {"query": "jazz", "bank_id": B, "max_results": 5, "max_tokens": 500,
                                      "tags": ["music"]}, 200, RECALL_RESULT,
     {"hits.0": MEMORY_HIT, "trace": RECALL_TRACE}),
    ("debug-recall", "post", "/v1/debug/recall", {"query": "jazz", "bank_id": B}, 200, {"trace", "result_count"},
     {"trace": RECALL_TRACE}),
    ("reflect", "post", "/v1/reflect", {"query": "What music does Alice like?", "bank_id": B, "max_tokens": 200,
                                        "include_sources": True}, 200, REFLECT_RESULT, {"sources.0": MEMORY_HIT}),
    ("forget", "post", "/v1/forget", {"bank_id": B, "memory_ids": ["MEM"]}, 200, FORGET_RESULT, {}),
    ("forget-erase", "post", "/v1/forget", {"bank_id": B, "memory_ids": ["MEM"], "erase": True}, 200,
     FORGET_RESULT | {"erased_count"}, {}),
    ("dsar", "post", "/v1/dsar/forget_principal", {"tenant_id": "acme", "principal": "user:alice"}, 200,
     DSAR | {"memories_erased"}, {"details.0": {"bank_id", "deleted", "erased"}}),
    ("history", "post", "/v1/history", {"query": "jazz", "bank_id": B, "as_of": "2030-01-01", "max_results": 10,
                                        "tags": ["music"]}, 200, HISTORY_RESULT, {"hits.0": MEMORY_HIT}),
    ("audit", "post", "/v1/audit", {"scope": "music", "bank_id": B, "max_memories": 50}, 200, AUDIT_RESULT, {}),
    ("compile", "post", "/v1/compile", {"bank_id": B, "scope": "music"}, 200, COMPILE_RESULT, {}),
    ("graph-search", "post", "/v1/graph/search", {"query": "Alice", "bank_id": B, "limit": 10}, 200, {"entities"},
     {"entities.0": ENTITY}),
    ("graph-neighbors", "post", "/v1/graph/neighbors", {"entity_ids": ["ENTITY"], "bank_id": B, "max_depth": 2,
                                                        "limit": 20}, 200, {"hits"}, {"hits.0": GRAPH_HIT}),
    ("export", "post", "/v1/export", {"bank_id": B, "path": "ROOT/out.ama.jsonl", "include_embeddings": False,
                                      "include_entities": True}, 200, {"bank_id", "path", "exported_count"}, {}),
    ("import", "post", "/v1/import", {"bank_id": B, "path": "ROOT/in.ama.jsonl", "on_conflict": "skip"}, 200,
     {"imported", "skipped", "errors"}, {}),
    ("mm-create", "post", "/v1/mental-models", {"bank_id": B, "model_id": "prefs", "title": "Prefs",
                                                "content": "Likes jazz.", "scope": "bank", "source_ids": ["m1"]},
     200, MENTAL_MODEL, {}),
    ("mm-list", "get", "/v1/mental-models", {"bank_id": B, "scope": "bank"}, 200, {"models"},
     {"models.0": MENTAL_MODEL}),
    ("mm-get", "get", "/v1/mental-models/mm", {"bank_id": B}, 200, MENTAL_MODEL, {}),
    ("mm-refresh", "post", "/v1/mental-models/mm/refresh", {"bank_id": B, "content": "Now likes blues.",
                                                            "source_ids": ["m2"]}, 200, MENTAL_MODEL, {}),
    ("mm-delete", "delete", "/v1/mental-models/mm", {"bank_id": B}, 200, {"deleted"}, {}),
    ("obs-invalidate", "post", "/v1/observations/invalidate", {"bank_id": B, "source_ids": ["MEM"]}, 200,
     {"deleted"}, {}),
    ("webhook", "post", "/v1/ingest/webhook/crm", "SIGNED", 200, WEBHOOK, {}),
    ("webhook-astrocyte-signed", "post", "/v1/ingest/webhook/astro", "ASTROCYTE-SIGNED", 200, WEBHOOK, {}),
    ("lifecycle", "post", "/v1/admin/lifecycle", {"bank_id": B}, 200, LIFECYCLE, {}),
    ("admin-banks", "get", "/v1/admin/banks", {}, 200, {"banks"}, {}),
    ("admin-banks-health", "get", "/v1/admin/banks/health", {}, 200, {"banks"},
     {"banks.0": BANK_HEALTH, "banks.0.metrics": HEALTH_METRICS}),
    ("admin-bank-health", "get", f"/v1/admin/banks/{B}/health", {}, 200, BANK_HEALTH, {"metrics": HEALTH_METRICS}),
    ("hold-set", "post", f"/v1/admin/banks/{B}/hold", {"hold_id": "h2", "reason": "litigation"}, 200, LEGAL_HOLD,
     {}),
    ("hold-release", "delete", f"/v1/admin/banks/{B}/hold/h1", {}, 200, {"bank_id", "hold_id", "released"}, {}),
    ("hold-get", "get", f"/v1/admin/banks/{B}/hold", {}, 200, {"bank_id", "under_hold"}, {}),
    ("admin-sources", "get", "/v1/admin/sources", {}, 200, {"sources"}, {"sources.0": {"id"}}),
    ("tenant-storage", "get", "/v1/admin/tenants/acme/storage", {}, 200, STORAGE, {"breakdown": STORAGE_BREAKDOWN}),
    ("sync-push", "post", f"/v1/banks/{B}/sync/push",
     {"records": [{"id": "rec-00001", "text": "Alice pushed this.", "tags": ["sync"], "fact_type": "world",
                   "metadata": {"n": 1}, "occurred_at": "2026-03-01T00:00:00Z"}]}, 200, {"results"},
     {"results.0": {"id", "status"}}),
    ("changes", "get", f"/v1/banks/{B}/changes", {"limit": 10}, 200, {"changes", "next_cursor", "has_more"},
     {"changes.0": MEMORY_CHANGE}),
]


@pytest.fixture
def catalogue_world(client, make_bank, settings, tmp_path):
    from banks.models import Memory, WebhookSource
    from banks.services.holds import hold_set
    from banks.services.memories import memory_retain
    from banks.services.mental_models import mental_model_create

    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    settings.MEMORYHUB_CHANGES_SETTLE_SECONDS = 0
    (tmp_path / "in.ama.jsonl").write_text('{"_ama_version": 1, "bank_id": "x", "exported_at": "", '
                                           '"provider": "p", "memory_count": 1}\n{"id": "a", "text": "imported"}\n')
    alice = make_bank(B)
    memory = memory_retain(bank=alice, text="Alice Smith likes jazz records.", actor="test", tags=["music"]).memory
    memory_retain(bank=make_bank(T), text="Alice asked for a refund.", actor="test", tags=["principal:user:alice"])
    mental_model_create(bank=alice, model_id="mm", title="Model", content="# A\n\ntext", actor="test")
    hold_set(bank=alice, hold_id="h1", reason="review", set_by="test", actor="test")
    WebhookSource.objects.create(source_id="crm", bank=alice, secret=SECRET)
    entity = alice.entities.order_by("pk").first()
    assert memory is not None and entity is not None and Memory.objects.filter(bank=alice).count() == 1
    return {"MEM": memory.memory_id, "ENTITY": entity.entity_id, "ROOT": str(tmp_path)}


def _fill(value, world):
    if isinstance(value, str):
        for key, real in world.items():
            value = value.replace(key, real) if key == "ROOT" or value == key else value
        return value
    if isinstance(value, list):
        return [_fill(v, world) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, world) for k, v in value.items()}
    return value


def _send(client, method, path, payload, world):
    if payload == "SIGNED":
        import time

        from banks.live.webhooks import sign

        body, stamp = b'{"content": "Acme renewed its contract."}', str(int(time.time()))
        return client.client.post(path, body, content_type="application/json", HTTP_X_WEBHOOK_TIMESTAMP=stamp,
                                  HTTP_X_WEBHOOK_SIGNATURE=sign(SECRET, stamp, body))
    if payload == "ASTROCYTE-SIGNED":  # Astrocyte's scheme: sha256=HMAC(secret, raw body), no timestamp
        import hashlib
        import hmac

        from banks.models import Bank, WebhookSource

        WebhookSource.objects.create(source_id="astro", bank=Bank.objects.get(bank_id=B), secret=SECRET,
                                     signature_scheme="body")
        body = b'{"content": "Acme asked for an invoice."}'
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        return client.client.post(path, body, content_type="application/json", HTTP_X_ASTROCYTE_SIGNATURE=signature)
    return getattr(client, method)(path, _fill(payload, world))


def _at(body, where: str):
    for part in where.split("."):
        body = body[int(part)] if part.isdigit() else body[part]
    return body


@pytest.mark.parametrize(("name", "method", "path", "payload", "status", "keys", "inside"), CATALOGUE,
                         ids=[row[0] for row in CATALOGUE])
def test_every_catalogue_route_answers_the_documented_status_and_keys(client, catalogue_world, name, method, path,
                                                                      payload, status, keys, inside):
    if name in ("forget", "forget-erase"):
        client.delete(f"/v1/admin/banks/{B}/hold/h1")
    response = _send(client, method, path, payload, catalogue_world)
    assert response.status_code == status, response.content
    body = response.json()
    assert keys <= set(body), f"missing {sorted(keys - set(body))}"
    for where, nested in inside.items():
        assert nested <= set(_at(body, where)), f"{where} misses {sorted(nested - set(_at(body, where)))}"
    if "metrics" in str(inside):  # Astrocyte's metrics are dict[str, float]: numbers, never null
        for where in (w for w in inside if w.endswith("metrics")):
            assert all(isinstance(v, float) for v in _at(body, where).values()), _at(body, where)


def test_the_catalogue_covers_every_route_astrocyte_documents():
    from pathlib import Path

    documented = set()
    for line in (Path(__file__).parents[2] / "fixtures" / "astrocyte_routes.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            method, route = line.split()
            documented.add((method.lower(), route))
    ours = {(m, "/".join("{}" if s in {B, "mm", "h1", "crm", "acme"} or s.startswith("{") else s
                         for s in p.split("/"))) for _, m, p, *_ in CATALOGUE}
    assert not {(m, "/".join("{}" if s.startswith("{") else s for s in r.split("/")))
                for m, r in documented} - ours


# --- The same reads on a bank the caller may use but nobody wrote to: 200, empty, nothing created ------------------

NEW = "user-new"
NEW_BANK_READS = [
    ("post", "/v1/recall", {"query": "jazz", "bank_id": NEW}, 200, {"hits": [], "total_available": 0}),
    ("post", "/v1/recall", {"query": "jazz", "banks": [NEW, "user-other"], "strategy": "parallel"}, 200,
     {"hits": []}),
    ("post", "/v1/recall", {"query": "jazz", "banks": [NEW, "user-other"], "strategy": "cascade"}, 200,
     {"hits": []}),
    ("post", "/v1/reflect", {"query": "What does Alice like?", "banks": [NEW, "user-other"],
                             "include_sources": False}, 200, {"sources": None}),
    ("post", "/v1/debug/recall", {"query": "jazz", "bank_id": NEW}, 200, {"result_count": 0}),
    ("post", "/v1/reflect", {"query": "What does Alice like?", "bank_id": NEW}, 200, {"sources": []}),
    ("post", "/v1/history", {"query": "jazz", "bank_id": NEW, "as_of": "2030-01-01T00:00:00Z"}, 200,
     {"hits": [], "bank_id": NEW}),
    ("post", "/v1/audit", {"scope": "music", "bank_id": NEW}, 200, {"memories_scanned": 0}),
    ("post", "/v1/compile", {"bank_id": NEW}, 200, {"pages_created": 0}),
    ("post", "/v1/graph/search", {"query": "Alice", "bank_id": NEW}, 200, {"entities": []}),
    ("post", "/v1/graph/neighbors", {"entity_ids": ["alice"], "bank_id": NEW}, 200, {"hits": []}),
    ("get", "/v1/mental-models", {"bank_id": NEW}, 200, {"models": []}),
    ("get", "/v1/mental-models/m1", {"bank_id": NEW}, 404, {"detail": "mental model not found"}),
    ("delete", "/v1/mental-models/m1", {"bank_id": NEW}, 200, {"deleted": False}),
    ("post", "/v1/observations/invalidate", {"bank_id": NEW, "source_ids": ["m1"]}, 200, {"deleted": 0}),
    ("get", "/v1/observations", {"bank_id": NEW}, 200, {"observations": []}),
    ("get", "/v1/directives", {"bank_id": NEW}, 200, {"directives": []}),
    ("post", "/v1/forget", {"bank_id": NEW, "scope": "all"}, 200, {"deleted_count": 0}),
    ("post", "/v1/admin/lifecycle", {"bank_id": NEW}, 200, {"deleted_count": 0, "archived_count": 0, "actions": []}),
    ("get", f"/v1/admin/banks/{NEW}/health", {}, 200, {"bank_id": NEW}),
    ("get", f"/v1/admin/banks/{NEW}/hold", {}, 200, {"under_hold": False}),
    ("delete", f"/v1/admin/banks/{NEW}/hold/h1", {}, 200, {"released": False}),
    ("get", f"/v1/banks/{NEW}/changes", {}, 200, {"changes": [], "has_more": False}),
    ("post", "/v1/dsar/forget_principal", {"tenant_id": "newco", "principal": "user:alice"}, 200,
     {"banks_processed": 0, "details": []}),
    ("get", "/v1/admin/tenants/newco/storage", {}, 404, {"error": {"code": "tenant_not_found",
                                                                   "message": "no bank belongs to tenant 'newco' "
                                                                              "(bank ids 'newco:...')"}}),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "expected"), NEW_BANK_READS,
                         ids=[f"{r[0]} {r[1]}" for r in NEW_BANK_READS])
def test_reads_on_a_bank_never_written_are_empty_and_create_nothing(client, method, path, body, status, expected):
    from banks.models import Bank, BankUsage, Job

    banks_before = Bank.objects.count()
    response = getattr(client, method)(path, body)
    assert response.status_code == status, response.content
    data = response.json()
    for key, value in expected.items():
        assert data[key] == value, (key, data)
    assert not Bank.objects.filter(bank_id__in=[NEW, "user-other"]).exists()
    assert Bank.objects.count() == banks_before and not BankUsage.objects.exists() and not Job.objects.exists()
    if "health" in path:
        assert data["metrics"]["memory_count"] == 0.0 and data["metrics"]["recall_count"] == 0.0
        # Numbers, as Astrocyte answers a bank with nothing recorded yet (0.0; 1.0 for reflect success).
        assert all(isinstance(v, float) for v in data["metrics"].values()), data["metrics"]
        assert data["metrics"]["recall_hit_rate"] == 0.0 and data["metrics"]["reflect_success_rate"] == 1.0


def test_seed_export_and_import_calls(client, settings, tmp_path):
    """The seed's export/import curl calls: inside the configured roots they run; the seed's own path,
    outside them, is Astrocyte's 422 with the operator hint."""
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    client.post("/v1/retain", {"content": "Customer prefers dark-mode UI.", "bank_id": "user-prefs"})
    outside = client.post("/v1/export", {"bank_id": "user-prefs", "path": "/backups/user-prefs.ama.jsonl"})
    assert outside.status_code == 422 and "/backups/user-prefs.ama.jsonl" in outside.json()["detail"]
    path = str(tmp_path / "user-prefs.ama.jsonl")
    exported = client.post("/v1/export", {"bank_id": "user-prefs", "path": path})
    # Each bank sees the root as its own: the file is in the bank's folder, and the answer says where.
    written = str(bank_folder(tmp_path, "user-prefs") / "user-prefs.ama.jsonl")
    assert exported.status_code == 200 and exported.json() == {"bank_id": "user-prefs", "path": written,
                                                               "exported_count": 1} | {
        k: v for k, v in exported.json().items() if k not in {"bank_id", "path", "exported_count"}}
    imported = client.post("/v1/import", {"bank_id": "user-prefs", "path": path, "on_conflict": "skip"})
    assert imported.status_code == 200 and {"imported", "skipped", "errors"} <= set(imported.json())
    assert imported.json()["imported"] == 0 and imported.json()["skipped"] == 1


# --- What an Astrocyte client reads that MemoryHub once answered differently -----------------------------------------
# (The MCP rows, multi-bank recall and reflect and "__all__" bank health, are in tests/agents/test_mcp_astrocyte_shapes.)


def test_a_new_text_pushed_under_a_held_id_is_rejected_and_nothing_changes(client):
    from banks.models import Memory

    push = f"/v1/banks/{B}/sync/push"
    assert client.post(push, {"records": [{"id": "rec-00001", "text": "Alice likes tea."}]}).json()["results"][0][
        "status"] == "stored"
    answer = client.post(push, {"records": [{"id": "rec-00001", "text": "Alice likes coffee."}]})
    assert answer.status_code == 200
    assert answer.json()["results"] == [{"id": "rec-00001", "status": "rejected",
                                         "reason": "id is already in use with different text; "
                                                   "memory text is immutable"}]
    assert Memory.objects.get(memory_id="rec-00001").text == "Alice likes tea."


def test_a_mental_model_refreshed_by_source_ids_keeps_its_content(client):
    client.post("/v1/mental-models", {"bank_id": B, "model_id": "plain", "title": "Plain", "content": "plain text",
                                      "source_ids": ["m1"]})
    refreshed = client.post("/v1/mental-models/plain/refresh", {"bank_id": B, "new_source_ids": ["m2", "m1"]})
    assert refreshed.status_code == 200, refreshed.content
    assert refreshed.json()["content"] == "plain text" and refreshed.json()["source_ids"] == ["m1", "m2"]
    assert refreshed.json()["revision"] == 2
    got = client.get("/v1/mental-models/plain", {"bank_id": B}).json()
    assert got["content"] == "plain text"


def test_changes_feed_limit_is_clamped_like_the_gateway(client, settings):
    settings.MEMORYHUB_CHANGES_SETTLE_SECONDS = 0
    for n in range(2):
        client.post("/v1/retain", {"content": f"Change number {n} for the feed.", "bank_id": B})
    at_least_one = client.get(f"/v1/banks/{B}/changes", {"limit": 0})
    assert at_least_one.status_code == 200, at_least_one.content
    assert len(at_least_one.json()["changes"]) == 1 and at_least_one.json()["has_more"] is True
    at_most = client.get(f"/v1/banks/{B}/changes", {"limit": 5000})
    assert at_most.status_code == 200 and len(at_most.json()["changes"]) == 2


def test_setting_a_hold_id_again_stores_the_new_reason_and_time(client):
    first = client.post(f"/v1/admin/banks/{B}/hold", {"hold_id": "case-7", "reason": "audit"}).json()
    second = client.post(f"/v1/admin/banks/{B}/hold", {"hold_id": "case-7", "reason": "litigation"})
    assert second.status_code == 200
    assert second.json()["reason"] == "litigation" and second.json()["set_at"] > first["set_at"]
    assert LEGAL_HOLD <= set(second.json())


def test_forget_on_a_held_bank_is_423_in_the_error_envelope(client):
    memory_id = client.post("/v1/retain", {"content": "Alice signed on 3 March.", "bank_id": B}).json()["memory_id"]
    client.post(f"/v1/admin/banks/{B}/hold", {"hold_id": "case-9", "reason": "litigation"})
    for body in ({"bank_id": B, "memory_ids": [memory_id]}, {"bank_id": B, "memory_ids": [memory_id], "erase": True}):
        refused = client.post("/v1/forget", body)
        assert refused.status_code == 423, refused.content  # what Astrocyte's team client reads as "legal hold"
        assert refused.json()["error"]["code"] == "legal_hold_active" and "case-9" in refused.json()["detail"]


def test_erase_and_dsar_report_what_was_erased(client, make_bank):
    from banks.services.memories import memory_retain

    memory_id = client.post("/v1/retain", {"content": "Alice's PIN is 4321.", "bank_id": B}).json()["memory_id"]
    erased = client.post("/v1/forget", {"bank_id": B, "memory_ids": [memory_id], "erase": True})
    assert erased.json() == {"deleted_count": 1, "archived_count": 0, "erased_count": 1}
    memory_retain(bank=make_bank(T), text="Alice asked for a refund.", actor="test", tags=["principal:user:alice"])
    dsar = client.post("/v1/dsar/forget_principal", {"tenant_id": "acme", "principal": "user:alice"}).json()
    assert dsar["memories_deleted"] == dsar["memories_erased"] == 1
    assert dsar["details"] == [{"bank_id": T, "deleted": 1, "erased": 1}]


def test_directives_lead_recall_by_default_and_a_bank_can_keep_them_out(client):
    """Seed 001: directives come before raw memories, and do not take a place of max_results. An
    Astrocyte client reads hits[0] as the best memory, so a bank can turn the default off
    (config.recall.include_directives); the request's include_directives still decides when given."""
    client.post("/v1/retain", {"content": "Alice works at Acme in Lisbon.", "bank_id": B})
    client.post("/v1/directives", {"bank_id": B, "rule_text": "Answer in one sentence."})
    query = {"query": "Where does Alice work?", "bank_id": B, "max_results": 1}

    default = client.post("/v1/recall", query).json()
    assert [h["layer"] for h in default["hits"]] == ["directive", "fact"]  # the rule, then max_results memories
    assert default["hits"][0]["text"] == "Answer in one sentence."

    patched = client.patch(f"/v1/banks/{B}", {"config": {"recall": {"include_directives": False}}})
    assert patched.status_code == 200, patched.content
    off = client.post("/v1/recall", query).json()
    assert [h["text"] for h in off["hits"]] == ["Alice works at Acme in Lisbon."]
    asked = client.post("/v1/recall", {**query, "include_directives": True}).json()
    assert [h["layer"] for h in asked["hits"]] == ["directive", "fact"]
    many = client.post("/v1/recall", {"query": "Where does Alice work?", "banks": [B, "user-prefs"]}).json()
    assert all(h["layer"] != "directive" for h in many["hits"]) and many["hits"]

    refused = client.patch(f"/v1/banks/{B}", {"config": {"recall": {"include_directives": "no"}}})
    assert refused.status_code == 400 and "config.recall.include_directives" in refused.json()["detail"]
