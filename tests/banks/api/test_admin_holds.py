"""Legal holds and bank health over /v1/admin, as Astrocyte clients call them (a held forget is a 423, as the team client expects)."""

from __future__ import annotations

import pytest

from banks.models import AuditEvent, Memory
from banks.services.memories import memory_retain
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

B = "user-alice"
HOLD = f"/v1/admin/banks/{B}/hold"


def _retain(bank, text="Alice signed the contract on 3 March."):
    return memory_retain(bank=bank, text=text, actor="test").memory_id


def test_hold_blocks_forget_until_released(api, bank):
    memory_id = _retain(bank)
    placed = api.post(HOLD, {"hold_id": "case-42", "reason": "litigation"})
    assert placed.status_code == 200, placed.content
    assert set(placed.json()) == {"hold_id", "bank_id", "reason", "set_at", "set_by"}
    assert placed.json()["set_by"] == "user:api" and placed.json()["bank_id"] == B

    state = api.get(HOLD).json()
    assert state["bank_id"] == B and state["under_hold"] is True
    assert [h["hold_id"] for h in state["holds"]] == ["case-42"]

    for body in ({"bank_id": B, "memory_ids": [memory_id]}, {"bank_id": B, "scope": "all"}):
        refused = api.post("/v1/forget", body)
        assert refused.status_code == 423, refused.content
        assert refused.json()["error"]["code"] == "legal_hold_active"
        assert "case-42" in refused.json()["detail"]
    assert api.delete(f"/v1/banks/{B}", {"confirm": B}).status_code == 423
    assert Memory.objects.live().filter(bank=bank, memory_id=memory_id).exists()

    released = api.delete(f"{HOLD}/case-42")
    assert released.json() == {"bank_id": B, "hold_id": "case-42", "released": True}
    assert api.delete(f"{HOLD}/case-42").json()["released"] is False
    assert api.get(HOLD).json()["under_hold"] is False
    assert api.post("/v1/forget", {"bank_id": B, "memory_ids": [memory_id]}).json()["deleted_count"] == 1
    actions = list(AuditEvent.objects.filter(bank=bank, action__startswith="bank.hold").values_list("action", flat=True))
    assert sorted(actions) == ["bank.hold_release", "bank.hold_set"]


def test_archive_is_allowed_under_hold(api, bank):
    memory_id = _retain(bank)
    api.post(HOLD, {"hold_id": "h1", "reason": "audit"})
    answer = api.post("/v1/forget", {"bank_id": B, "memory_ids": [memory_id], "archive": True})
    assert answer.status_code == 200 and answer.json()["archived_count"] == 1


def test_compliance_erase_overrides_the_hold_and_says_so(api, bank, api_for):
    memory_id = _retain(bank)
    api.post(HOLD, {"hold_id": "h1", "reason": "litigation"})
    forget_only = api_for({B: ["forget"]})
    body = {"bank_id": B, "memory_ids": [memory_id], "compliance": True, "reason": "GDPR erasure request 17"}
    assert forget_only.post("/v1/forget", body).status_code == 403
    assert api.post("/v1/forget", {**body, "reason": ""}).status_code == 400
    erased = api.post("/v1/forget", body)
    assert erased.status_code == 200 and erased.json()["deleted_count"] == 1
    assert not Memory.objects.filter(bank=bank, memory_id=memory_id).exists()
    event = AuditEvent.objects.get(bank=bank, action="memory.erase")
    assert event.compliance and event.reason == "GDPR erasure request 17"
    assert event.details["overrode_holds"] == ["h1"]
    assert api.get(HOLD).json()["under_hold"] is True  # the erase does not lift the hold


def test_placing_the_same_hold_again_sets_it_anew(api, bank):
    """As Astrocyte: the hold id is stored again with the new reason and a new set_at (one hold still)."""
    first = api.post(HOLD, {"hold_id": "h1", "reason": "one", "set_by": "user:legal"}).json()
    second = api.post(HOLD, {"hold_id": "h1", "reason": "two"}).json()
    assert second["reason"] == "two" and second["set_by"] == "user:api" and second["set_at"] > first["set_at"]
    assert [(h["hold_id"], h["reason"]) for h in api.get(HOLD).json()["holds"]] == [("h1", "two")]
    event = AuditEvent.objects.filter(bank=bank, action="bank.hold_set").order_by("-pk").first()
    assert event is not None and event.details["replaced"]["reason"] == "one"


def test_hold_body_is_checked(api, bank):
    answer = api.post(HOLD, {"hold_id": "h1"})
    assert answer.status_code == 400 and "reason" in answer.json()["detail"]
    assert api.post(HOLD, {"hold_id": "  ", "reason": "x"}).status_code == 400


def test_new_bank_reads_answer_empty_and_a_hold_creates_it(api_for):
    client = api_for({"user-*": ["admin"]})
    assert client.get("/v1/admin/banks/user-new/hold").json() == {"bank_id": "user-new", "under_hold": False,
                                                                    "holds": []}
    assert client.delete("/v1/admin/banks/user-new/hold/h1").json()["released"] is False
    health = client.get("/v1/admin/banks/user-new/health")
    assert health.status_code == 200 and health.json()["metrics"]["memory_count"] == 0.0
    assert client.post("/v1/admin/banks/user-new/hold", {"hold_id": "h1", "reason": "r"}).status_code == 200
    assert client.get("/v1/admin/banks/user-new/hold").json()["under_hold"] is True


def test_invalid_bank_id_is_400_before_any_lookup(api_for):
    client = api_for({"*": ["admin"]})
    for path in ("/v1/admin/banks/-bad/hold", "/v1/admin/banks/-bad/health"):
        answer = client.get(path)
        assert answer.status_code == 400 and "Invalid bank_id" in answer.json()["detail"], answer.content


def test_admin_banks_lists_only_banks_the_caller_administers(make_bank, api_for):
    make_bank("user-alice")
    make_bank("user-bob")
    make_bank("team-x")
    client = api_for({"user-*": ["admin"], "team-x": ["read"]})
    assert client.get("/v1/admin/banks").json() == {"banks": ["user-alice", "user-bob"]}
    assert ApiClient().get("/v1/admin/banks").status_code == 401


def test_bank_health_counts_what_the_bank_holds(api, bank):
    _retain(bank, "Alice lives in Lisbon.")
    _retain(bank, "Alice plays the cello on Sundays.")
    api.post(HOLD, {"hold_id": "h1", "reason": "r"})
    health = api.get(f"/v1/admin/banks/{B}/health").json()
    assert {"bank_id", "score", "status", "issues", "metrics", "assessed_at"} <= set(health)
    assert health["status"] in ("healthy", "warning", "unhealthy")
    assert health["metrics"]["memory_count"] == 2.0 and health["metrics"]["retain_count"] == 2.0
    assert health["metrics"]["avg_content_length"] > 20
    assert {"recall_hit_rate", "dedup_rate", "recall_count", "reflect_count"} <= set(health["metrics"])
    assert [i["code"] for i in health["issues"]] == ["legal_hold"]
    everyone = api.get("/v1/admin/banks/health").json()["banks"]
    assert [h["bank_id"] for h in everyone] == [B]


def test_openapi_states_the_bank_id_rule(client):
    document = client.get("/v1/openapi.json").json()
    pattern = r"^[a-zA-Z0-9][a-zA-Z0-9._:@-]{0,254}$"
    hold = document["paths"]["/v1/admin/banks/{bank_id}/hold"]["post"]
    [bank_param] = [p for p in hold["parameters"] if p["name"] == "bank_id"]
    assert bank_param["schema"]["pattern"] == pattern
    assert hold["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/HoldSetRequest"}
    retain = document["components"]["schemas"]["RetainRequest"]["properties"]["bank_id"]
    assert retain["pattern"] == pattern
    listing = document["paths"]["/v1/mental-models"]["get"]["parameters"]
    assert [p["schema"]["pattern"] for p in listing if p["name"] == "bank_id"] == [pattern]
    import re

    assert re.fullmatch(pattern.strip("^$"), "user-alice") and not re.fullmatch(pattern.strip("^$"), "-bad")
