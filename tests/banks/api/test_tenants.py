"""Tenant routes: DSAR erase of a principal across a tenant's banks, and the tenant's storage."""

from __future__ import annotations

import pytest

from banks.models import AuditEvent, Memory
from banks.services.holds import hold_set
from banks.services.memories import memory_retain
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db
TAG = "principal:user:alice"


@pytest.fixture
def tenant(make_bank):
    decisions, notes, other = make_bank("acme:decisions"), make_bank("acme:notes"), make_bank("acmeco:x")
    for bank in (decisions, notes, other):
        memory_retain(bank=bank, text=f"Alice's request in {bank.bank_id}.", actor="test", tags=[TAG])
        memory_retain(bank=bank, text=f"Bob's note in {bank.bank_id}.", actor="test", tags=["principal:user:bob"])
    hold_set(bank=notes, hold_id="lit", reason="litigation", set_by="test", actor="test")
    return decisions, notes, other


def test_dsar_erases_the_principals_memories_in_every_tenant_bank(api_for, tenant):
    client = api_for({"acme:*": ["admin"]})
    response = client.post("/v1/dsar/forget_principal", {"tenant_id": "acme", "principal": "user:alice"})
    assert response.status_code == 200, response.content
    assert response.json() == {
        "tenant_id": "acme", "principal": "user:alice", "tag_convention": TAG, "banks_processed": 2,
        "memories_deleted": 2, "memories_erased": 2,
        "details": [{"bank_id": "acme:decisions", "deleted": 1, "erased": 1},
                    {"bank_id": "acme:notes", "deleted": 1, "erased": 1}]}
    erased = Memory.objects.filter(tags__contains=[TAG], bank__bank_id__startswith="acme:")
    assert all(m.text == "" and m.forgotten_at is not None for m in erased)
    # Another tenant whose id merely starts the same, and other principals, are untouched.
    assert Memory.objects.get(bank__bank_id="acmeco:x", tags__contains=[TAG]).forgotten_at is None
    assert Memory.objects.filter(tags__contains=["principal:user:bob"], forgotten_at__isnull=True).count() == 3
    # The hold on acme:notes was overridden, and that is on record.
    assert AuditEvent.objects.filter(action="memory.erase", bank__bank_id="acme:notes").exists()


def test_dsar_needs_admin_on_every_tenant_bank_before_touching_any(api_for, tenant):
    client = api_for({"acme:decisions": ["admin"], "acme:notes": ["read", "write", "forget"]})
    response = client.post("/v1/dsar/forget_principal", {"tenant_id": "acme", "principal": "user:alice"})
    assert response.status_code == 403 and "'admin' on bank 'acme:*'" in response.json()["detail"]
    assert "notes" not in response.json()["detail"] and "decisions" not in response.json()["detail"]
    assert not Memory.objects.filter(forgotten_at__isnull=False).exists()


def test_dsar_finds_what_a_principal_wrote_untagged(make_bank, make_token, api_for):
    """Retains over REST, the agent tools and sync push stamp the token's principal (metadata ``_actor``,
    as Astrocyte does, whatever the client claims); a DSAR for that principal erases them, and only them."""
    make_bank("acme:decisions"), make_bank("acme:notes")
    alice = ApiClient(make_token({"acme:*": ["read", "write"]}, principal="user:alice"))
    bob = ApiClient(make_token({"acme:*": ["read", "write"]}, principal="bob"))  # a bare id is a user
    wrote = alice.post("/v1/retain", {"bank_id": "acme:decisions", "content": "Ship the beta on Monday.",
                                      "metadata": {"_actor": "user:bob", "team": "core"}})
    assert wrote.status_code == 200, wrote.content
    stamped = Memory.objects.get(memory_id=wrote.json()["memory_id"])
    assert stamped.metadata == {"_actor": "user:alice", "team": "core"}  # the client's claim loses
    assert alice.post("/v1/agent/memory_retain", {"bank_id": "acme:notes", "content": "Alice owns billing."}
                      ).status_code == 200
    assert alice.post("/v1/agent/memory_add", {"bank_id": "acme:notes", "content": "Alice likes dark mode."}
                      ).status_code == 200
    pushed = alice.post("/v1/banks/acme:notes/sync/push", {"records": [{"id": "note-0001", "text": "Alice's todo."}]})
    assert pushed.json()["results"][0]["status"] == "stored"
    bobs = bob.post("/v1/retain", {"bank_id": "acme:notes", "content": "Bob prefers the old dashboard."}).json()
    assert Memory.objects.get(memory_id=bobs["memory_id"]).metadata["_actor"] == "user:bob"

    response = api_for({"acme:*": ["admin"]}).post("/v1/dsar/forget_principal",
                                                   {"tenant_id": "acme", "principal": "user:alice"})
    assert response.status_code == 200, response.content
    assert response.json()["memories_deleted"] == 4
    assert response.json()["details"] == [{"bank_id": "acme:decisions", "deleted": 1, "erased": 1},
                                          {"bank_id": "acme:notes", "deleted": 3, "erased": 3}]
    assert Memory.objects.filter(forgotten_at__isnull=True).count() == 1
    assert Memory.objects.get(memory_id=bobs["memory_id"]).forgotten_at is None
    assert not Memory.objects.filter(text__contains="Alice").exists()


def test_a_token_principal_must_be_astrocytes_form(make_token):
    from memoryhub.errors import InvalidInput

    with pytest.raises(InvalidInput, match="principal"):
        make_token({"acme:*": ["read"]}, principal="team lead")
    with pytest.raises(InvalidInput, match="principal"):
        make_token({"acme:*": ["read"]}, principal="robot:r2")


@pytest.mark.parametrize(("body", "field"), [
    ({"tenant_id": "", "principal": "user:alice"}, "tenant_id"),
    ({"tenant_id": "acme", "principal": ""}, "principal"),
    ({"tenant_id": "acme:decisions", "principal": "user:alice"}, "tenant_id"),
    ({"principal": "user:alice"}, "tenant_id"),
])
def test_dsar_bad_input_names_the_field(api_for, tenant, body, field):
    response = api_for({"acme:*": ["admin"]}).post("/v1/dsar/forget_principal", body)
    assert response.status_code == 400 and response.json()["detail"].startswith(f"{field}: ")


def test_tenant_storage_measures_the_tenants_own_rows(api_for, tenant):
    client = api_for({"acme:*": ["admin"]})
    body = client.get("/v1/admin/tenants/acme/storage").json()
    assert body["tenant_id"] == "acme" and body["banks"] == ["acme:decisions", "acme:notes"]
    breakdown = body["breakdown"]
    assert breakdown["memory_count"] == 4 and breakdown["heap_bytes"] > 0
    assert body["bytes_used"] == breakdown["heap_bytes"] + breakdown["index_bytes"]
    assert breakdown["last_write_at"] is not None and body["snapshot_age_seconds"] == 0
    one_bank = api_for({"acmeco:*": ["admin"]}).get("/v1/admin/tenants/acmeco/storage").json()
    assert one_bank["breakdown"]["memory_count"] == 2
    assert 0 < one_bank["breakdown"]["heap_bytes"] < breakdown["heap_bytes"]
    # A caller whose grants cover the whole of a tenant may learn it has no bank.
    missing = api_for({"*": ["admin"]}).get("/v1/admin/tenants/nobody/storage")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "tenant_not_found"


def _same(first, second, tenant_a, tenant_b):
    assert first.status_code == second.status_code == 403
    assert first.json()["detail"].replace(tenant_a, "T") == second.json()["detail"].replace(tenant_b, "T")


@pytest.mark.parametrize("grants", [{"b-*": ["*"]}, {"acme:decisions": ["admin"]}, {"acme:*": ["read", "forget"]}])
def test_a_stranger_cannot_tell_a_tenant_from_none(api_for, tenant, grants):
    """A tenant with banks the caller may not administer and a tenant with no bank at all answer the same
    403, which names no bank."""
    client = api_for(grants)
    _same(client.get("/v1/admin/tenants/acme/storage"), client.get("/v1/admin/tenants/nobody/storage"),
          "acme", "nobody")
    existing = client.post("/v1/dsar/forget_principal", {"tenant_id": "acme", "principal": "user:alice"})
    missing = client.post("/v1/dsar/forget_principal", {"tenant_id": "nobody", "principal": "user:alice"})
    _same(existing, missing, "acme", "nobody")
    assert "notes" not in existing.json()["detail"] and "decisions" not in existing.json()["detail"]
    assert not Memory.objects.filter(forgotten_at__isnull=False).exists()


def test_the_dsar_service_refuses_a_caller_without_admin_on_every_bank(tenant):
    from banks.access import Principal
    from banks.services.dsar import dsar_forget_principal
    from memoryhub.errors import AccessDenied

    decisions, notes, _ = tenant
    caller = Principal(label="token:x", grants=[("acme:decisions", frozenset({"admin"})),
                                                 ("acme:notes", frozenset({"read", "forget"}))])
    with pytest.raises(AccessDenied):
        dsar_forget_principal(banks=[decisions, notes], tenant_id="acme", principal="user:alice", actor="test",
                              by=caller)
    assert not Memory.objects.filter(forgotten_at__isnull=False).exists()
