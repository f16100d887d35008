"""Side by side with Astrocyte's gateway: the documented request bodies (seed 001 curl calls and
the measured shapes of Astrocyte 0.22) must get the same status codes and response keys here."""

from __future__ import annotations

import pytest

from tests.banks.api.astrocyte_shapes import (
    ENTITY,
    GRAPH_HIT,
    LEGAL_HOLD,
    MEMORY_HIT,
    MENTAL_MODEL,
    OUR_TRACE,
    RECALL_RESULT,
    RECALL_TRACE,
    RETAIN_RESULT,
    B,
    T,
    client_on_every_bank,
)
from tests.portability.fixtures import bank_folder

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(api_for, make_bank):
    return client_on_every_bank(api_for, make_bank)


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
