"""Every route of Astrocyte's endpoint catalogue answers the documented status and keys, table-driven, and
the same reads on a bank nobody wrote to answer empty and create nothing (the seed's calls and the
shapes an Astrocyte client reads are tests/banks/api/test_astrocyte_contract.py)."""

from __future__ import annotations

import pytest

from tests.banks.api.astrocyte_shapes import (
    AUDIT_RESULT,
    BANK_HEALTH,
    COMPILE_RESULT,
    DSAR,
    ENTITY,
    FORGET_RESULT,
    GRAPH_HIT,
    HEALTH,
    HEALTH_METRICS,
    HISTORY_RESULT,
    INGEST,
    LEGAL_HOLD,
    LIFECYCLE,
    LIVE,
    MEMORY_CHANGE,
    MEMORY_HIT,
    MENTAL_MODEL,
    RECALL_RESULT,
    RECALL_TRACE,
    REFLECT_RESULT,
    RETAIN_RESULT,
    SECRET,
    STORAGE,
    STORAGE_BREAKDOWN,
    WEBHOOK,
    B,
    T,
    client_on_every_bank,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(api_for, make_bank):
    return client_on_every_bank(api_for, make_bank)


# --- Every route of Astrocyte's endpoint catalogue, table-driven --------------------------------------------------

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
