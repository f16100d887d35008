"""Every /v1 route against every kind of caller: no token, another bank, missing permission, allowed."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from banks.models import Bank
from banks.services.banks import bank_create
from banks.services.directives import directive_create
from banks.services.memories import memory_retain
from banks.services.mental_models import mental_model_create
from banks.services.observations import observation_create
from tests.conftest import ApiClient
from tests.portability.fixtures import bank_folder

pytestmark = pytest.mark.django_db

B = "user-alice"
T = "acme:decisions"  # the one bank of tenant "acme": the tenant routes are checked against it
ALL = ("read", "write", "forget", "admin")

# method, path, payload (body for POST/PATCH, query for GET/DELETE), permission
ROUTES = [
    ("post", "/v1/retain", {"content": "Alice likes jazz.", "bank_id": B}, "write"),
    ("post", "/v1/recall", {"query": "jazz", "bank_id": B}, "read"),
    ("post", "/v1/history", {"query": "jazz", "bank_id": B, "as_of": "2030-01-01T00:00:00Z"}, "read"),
    ("post", "/v1/debug/recall", {"query": "jazz", "bank_id": B}, "read"),
    ("post", "/v1/forget", {"bank_id": B, "memory_ids": ["nope"]}, "forget"),
    ("post", "/v1/reflect", {"query": "jazz", "bank_id": B}, "read"),
    ("post", "/v1/audit", {"scope": "music", "bank_id": B}, "read"),
    ("post", "/v1/compile", {"bank_id": B}, "read"),  # Astrocyte asks read for compile
    ("post", "/v1/graph/search", {"query": "Alice", "bank_id": B}, "read"),
    ("post", "/v1/graph/neighbors", {"entity_ids": ["alice"], "bank_id": B}, "read"),
    ("get", "/v1/mental-models", {"bank_id": B}, "read"),
    ("post", "/v1/mental-models", {"bank_id": B, "model_id": "m2", "title": "T", "content": "x"}, "write"),
    ("get", "/v1/mental-models/mm", {"bank_id": B}, "read"),
    ("patch", "/v1/mental-models/mm", {"bank_id": B, "operations": [{"op": "add_section", "heading": "H"}]},
     "write"),
    ("delete", "/v1/mental-models/mm", {"bank_id": B}, "forget"),
    ("post", "/v1/mental-models/mm/refresh", {"bank_id": B, "content": "new"}, "write"),
    ("post", "/v1/mental-models/mm/update", {"bank_id": B, "operations": [{"op": "add_section", "heading": "H"}]},
     "write"),
    ("get", "/v1/mental-models/mm/revisions", {"bank_id": B}, "read"),
    ("get", "/v1/mental-models/mm/revisions/1", {"bank_id": B}, "read"),
    ("get", "/v1/mental-models/mm/diff", {"bank_id": B, "from": 1, "to": 1}, "read"),
    ("post", "/v1/mental-models/mm/revert", {"bank_id": B, "revision": 1}, "write"),
    ("get", "/v1/observations", {"bank_id": B}, "read"),
    ("post", "/v1/observations", {"bank_id": B, "text": "Likes jazz."}, "write"),
    ("get", "/v1/observations/OBS", {"bank_id": B}, "read"),
    ("patch", "/v1/observations/OBS", {"bank_id": B, "confidence": 0.8}, "write"),
    ("delete", "/v1/observations/OBS", {"bank_id": B}, "forget"),
    ("post", "/v1/observations/invalidate", {"bank_id": B, "source_ids": ["x"]}, "forget"),
    ("post", "/v1/observations/consolidate", {"bank_id": B}, "write"),
    ("get", "/v1/directives", {"bank_id": B}, "read"),
    ("post", "/v1/directives", {"bank_id": B, "rule_text": "Be brief."}, "write"),
    ("get", "/v1/directives/dir", {"bank_id": B}, "read"),
    ("patch", "/v1/directives/dir", {"bank_id": B, "priority": 3}, "write"),
    ("delete", "/v1/directives/dir", {"bank_id": B}, "forget"),
    ("post", "/v1/directives/dir/deactivate", {"bank_id": B}, "write"),
    ("post", "/v1/export", {"bank_id": B, "path": "ROOT/out.ama.jsonl"}, "admin"),
    ("post", "/v1/import", {"bank_id": B, "path": "ROOT/in.ama.jsonl"}, "admin"),
    ("get", "/v1/jobs/JOB", {"bank_id": B}, "read"),
    ("post", "/v1/jobs/JOB/cancel", {"bank_id": B}, "admin"),
    ("post", "/v1/jobs/DEAD/resume", {"bank_id": B}, "admin"),
    ("get", f"/v1/banks/{B}", {}, "read"),
    ("patch", f"/v1/banks/{B}", {"name": "Alice"}, "admin"),
    ("delete", f"/v1/banks/{B}", {"confirm": B}, "admin"),
    ("get", f"/v1/admin/banks/{B}/health", {}, "admin"),
    ("get", f"/v1/admin/banks/{B}/hold", {}, "admin"),
    ("post", f"/v1/admin/banks/{B}/hold", {"hold_id": "h1", "reason": "litigation"}, "admin"),
    ("delete", f"/v1/admin/banks/{B}/hold/h1", {}, "admin"),
    ("get", f"/v1/admin/banks/{B}/lifecycle", {}, "admin"),
    ("put", f"/v1/admin/banks/{B}/lifecycle", {"delete_after_days": 365}, "admin"),
    ("post", "/v1/admin/lifecycle", {"bank_id": B}, "admin"),
    ("post", f"/v1/banks/{B}/sync/push", {"records": [{"id": "rec-00001", "text": "Alice pushed this."}]}, "write"),
    ("get", f"/v1/banks/{B}/changes", {"limit": 10}, "read"),
    ("post", "/v1/dsar/forget_principal", {"tenant_id": "acme", "principal": "user:alice"}, "admin"),
    ("get", "/v1/admin/tenants/acme/storage", {}, "admin"),
    ("post", f"/v1/banks/{B}/reextract-entities", {}, "admin"),
]


def bank_of(path: str, payload: dict) -> str:
    return T if "/acme/" in path or payload.get("tenant_id") == "acme" else B


@pytest.fixture
def world(bank: Bank, settings, tmp_path) -> dict[str, str]:
    from banks.services.jobs import job_create

    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    (bank_folder(tmp_path, B) / "in.ama.jsonl").write_text('{"_ama_version": 1, "bank_id": "x", "exported_at": "", '
                                           '"provider": "p", "memory_count": 1}\n{"id": "a", "text": "imported"}\n')
    job = job_create(kind="import", actor="test", bank=bank)
    dead = job_create(kind="import", actor="test", bank=bank, params={"path": str(tmp_path / "in.ama.jsonl")})
    dead.state = "failed"
    dead.save(update_fields=["state"])
    memory_retain(bank=bank, text="Alice Smith likes jazz.", actor="test")
    memory_retain(bank=bank_create(bank_id=T, actor="test"), text="Alice asked for a refund.", actor="test",
                  tags=["principal:user:alice"])
    mental_model_create(bank=bank, model_id="mm", title="Model", content="# A\n\ntext", actor="test")
    directive_create(bank=bank, rule_text="Be kind.", directive_id="dir", actor="test")
    obs = observation_create(bank=bank, text="Jazz fan.", actor="test")
    return {"OBS": obs.observation_id, "ROOT": str(tmp_path), "JOB": str(job.pk), "DEAD": str(dead.pk)}


def call(client: ApiClient, method: str, path: str, payload: dict, world: dict[str, str]):
    for key, value in world.items():
        path = path.replace(key, value)
    payload = {k: v.replace("ROOT", world["ROOT"]) if isinstance(v, str) else v for k, v in payload.items()}
    if method in ("get", "delete"):
        return getattr(client, method)(path, payload)
    return getattr(client, method)(path, payload)


@pytest.mark.parametrize(("method", "path", "payload", "permission"), ROUTES,
                         ids=[f"{m} {p}" for m, p, _, _ in ROUTES])
class TestRouteMatrix:
    def test_no_token(self, world, method, path, payload, permission):
        response = call(ApiClient(), method, path, payload, world)
        assert response.status_code == 401, response.content

    def test_other_bank_only(self, world, make_bank, make_token, method, path, payload, permission):
        make_bank("user-bob")
        response = call(ApiClient(make_token({"user-bob": list(ALL)})), method, path, payload, world)
        assert response.status_code == 403, response.content
        assert response.json()["error"]["code"] == "access_denied"

    def test_missing_permission(self, world, make_token, method, path, payload, permission):
        others = [p for p in ALL if p != permission]
        response = call(ApiClient(make_token({bank_of(path, payload): others})), method, path, payload, world)
        assert response.status_code == 403, response.content
        assert f"'{permission}'" in response.json()["detail"]

    def test_allowed(self, world, make_token, method, path, payload, permission):
        response = call(ApiClient(make_token({bank_of(path, payload): [permission]})), method, path, payload, world)
        assert response.status_code in (200, 202), response.content


def _v1_routes() -> set[str]:
    found: set[str] = set()

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                route = prefix + str(pattern.pattern)
                if route.startswith("v1/"):
                    found.add("/" + route.replace("<str:", "{").replace("<int:", "{").replace(">", "}"))

    walk(get_resolver().url_patterns)
    return found


def test_the_matrix_covers_every_route_with_a_bank():
    covered = {p for _, p, _, _ in ROUTES}
    bankless = {"/v1/openapi.json", "/v1/docs", "/v1/banks", "/v1/admin/banks", "/v1/admin/banks/health",
                "/v1/admin/sources"}
    names = {"mm": "{model_id}", "OBS": "{observation_id}", "dir": "{directive_id}", B: "{bank_id}",
             "1": "{number}", "JOB": "{job_id}", "DEAD": "{job_id}", "h1": "{hold_id}", "acme": "{tenant_id}"}
    normalised = {"/".join(names.get(segment, segment) for segment in p.split("/")) for p in covered}
    missing = {r for r in _v1_routes() - bankless if r not in normalised
               and not r.startswith(("/v1/agent", "/v1/ingest"))}
    assert not missing, f"routes without a permission test: {sorted(missing)}"


# Routes that name no bank: they answer for the banks the token administers, and nothing else.
BANKLESS_ADMIN = [("/v1/admin/banks", "banks"), ("/v1/admin/banks/health", "banks"), ("/v1/admin/sources", "sources")]


@pytest.mark.parametrize(("path", "key"), BANKLESS_ADMIN, ids=[p for p, _ in BANKLESS_ADMIN])
def test_bankless_admin_routes_answer_only_for_administered_banks(world, make_bank, make_token, path, key):
    from banks.models import WebhookSource

    WebhookSource.objects.create(source_id="alice-crm", bank=Bank.objects.get(bank_id=B), secret="s")
    WebhookSource.objects.create(source_id="bob-crm", bank=make_bank("user-bob"), secret="s")
    assert ApiClient().get(path).status_code == 401

    def names(grants: dict[str, list[str]]) -> list[str]:
        response = ApiClient(make_token(grants)).get(path)
        assert response.status_code == 200, response.content
        rows = response.json()[key]
        return [r if isinstance(r, str) else r.get("bank_id", r.get("source_id")) for r in rows]

    assert names({B: ["read", "write", "forget"]}) == []
    admin = names({B: ["admin"]})
    assert admin in ([B], ["alice-crm"]), admin
    assert "user-bob" not in names({B: ALL}) and "bob-crm" not in names({B: ALL})


@pytest.mark.parametrize("path", ["/live", "/health/live", "/health", "/health/ingest"])
def test_probes_answer_without_a_token(db, path):
    response = ApiClient().get(path)
    assert response.status_code == 200, response.content


def test_openapi_lists_every_route(client):
    document = client.get("/v1/openapi.json").json()
    assert document["openapi"].startswith("3.")
    paths = set(document["paths"])
    # The agent route is listed once per tool (/v1/agent/memory_recall, ...), each with its own body.
    missing = {r for r in _v1_routes() if r not in paths and r not in {"/v1/openapi.json", "/v1/docs"}
               and not (r == "/v1/agent/{name}" and "/v1/agent/memory_recall" in paths)}
    assert not missing, f"routes missing from the OpenAPI document: {sorted(missing)}"
    retain = document["paths"]["/v1/retain"]["post"]
    assert retain["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RetainRequest"}
    assert "content" in document["components"]["schemas"]["RetainRequest"]["required"]
    recall = document["paths"]["/v1/recall"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert recall == {"$ref": "#/components/schemas/RecallResult"}
    assert "MemoryHit" in document["components"]["schemas"]


def test_docs_page_renders(client):
    page = client.get("/v1/docs")
    assert page.status_code == 200
    assert "POST /v1/retain" in page.content.decode()
