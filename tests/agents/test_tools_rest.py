"""The AgentOS tools and Astrocyte's MCP tool set over REST, with permissions for every tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agents.toolbox import TOOLS
from banks.models import AuditEvent, Bank, Entity, Memory, MemoryLink, Observation
from banks.services.holds import hold_set
from banks.services.memories import memory_retain
from banks.services.mental_models import mental_model_create
from banks.services.observations import observation_create
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db
B = {"bank_id": "user-alice"}


def tool(client, name, **args):
    response = client.post(f"/v1/agent/{name}", {**B, **args})
    assert response.status_code == 200, response.content
    return response.json()


def test_memory_add_maps_types_and_dedups_by_hash(api):
    first = tool(api, "memory_add", content="User prefers dark mode and TypeScript.", type="semantic",
                 tags=["preference", "ui"])
    again = tool(api, "memory_add", content="User prefers dark mode and TypeScript.", type="semantic")
    assert again["traceId"] == first["traceId"] and again["deduplicated"] is True
    memory = Memory.objects.get(memory_id=first["traceId"])
    assert (memory.fact_type, memory.memory_layer, memory.metadata["scope"]) == ("world", "semantic", "user")
    episodic = tool(api, "memory_add", content="We discussed the release plan today.")
    assert Memory.objects.get(memory_id=episodic["traceId"]).fact_type == "experience"
    bad = api.post("/v1/agent/memory_add", {**B, "content": "x", "type": "dream"})
    assert bad.status_code == 400 and "type" in bad.json()["detail"]


def test_update_rehashes_and_reembeds(api):
    trace = tool(api, "memory_add", content="User uses VS Code.")["traceId"]
    before = Memory.objects.get(memory_id=trace)
    assert tool(api, "memory_update", traceId=trace, content="User uses Cursor.", tags=["editor"]) == {
        "updated": True}
    after = Memory.objects.get(memory_id=trace)
    assert after.content_hash != before.content_hash and after.tags == ["editor"]
    assert list(after.embedding) != list(before.embedding)
    assert tool(api, "memory_update", traceId="nope", content="x") == {"updated": False}


def test_delete_is_soft_and_out_of_search(api):
    trace = tool(api, "memory_add", content="Deploys happen on Friday afternoons.")["traceId"]
    assert tool(api, "memory_search", query="deploys friday")["results"][0]["id"] == trace
    assert tool(api, "memory_delete", traceId=trace) == {"deleted": True}
    assert tool(api, "memory_search", query="deploys friday")["results"] == []
    assert Memory.objects.get(memory_id=trace).forgotten_at is not None  # kept for audit
    assert tool(api, "memory_delete", traceId=trace) == {"deleted": False}


def test_merge_keeps_provenance_and_repoints_entities(api):
    a = tool(api, "memory_add", content="Alice Smith deploys with Docker Compose.", tags=["deploy"])["traceId"]
    b = tool(api, "memory_add", content="Alice Smith prefers blue-green deploys.", tags=["strategy"])["traceId"]
    tool(api, "memory_create_observation", text="Alice cares about deploys.", source_ids=[b])
    merged = tool(api, "memory_merge", traceIds=[a, b],
                  content="Alice's deploy preferences: Docker Compose, blue-green.")
    assert merged == {"mergedTraceId": a, "sourcesDeleted": 1}
    survivor, source = Memory.objects.get(memory_id=a), Memory.objects.get(memory_id=b)
    assert survivor.text == "Alice's deploy preferences: Docker Compose, blue-green."
    assert survivor.tags == ["deploy", "strategy"] and survivor.metadata["merged_from"] == [b]
    assert source.archived_at is not None and source.merged_into_id == survivor.pk
    assert MemoryLink.objects.get(source=source).link_type == "merged_into"
    assert Entity.objects.get(name="Alice Smith").memories.filter(pk=survivor.pk).exists()
    assert Observation.objects.get().evidence.filter(memory_ref=a).exists()
    assert AuditEvent.objects.filter(action="memory.merge").count() == 1
    assert api.post("/v1/agent/memory_merge", {**B, "traceIds": [a]}).status_code == 400


def test_search_filters_type_scope_and_limit(api):
    for i in range(3):
        tool(api, "memory_add", content=f"Deployment note number {i} for the team", type="procedural",
             scope="organization")
    tool(api, "memory_add", content="Deployment went badly yesterday", type="episodic", scope="thread")
    results = tool(api, "memory_search", query="deployment", type="procedural", limit=2)["results"]
    assert len(results) == 2 and all(r["type"] == "procedural" for r in results)
    assert set(results[0]) == {"id", "content", "type", "scope", "strength", "tags"}
    scoped = tool(api, "memory_search", query="deployment", scope="thread")["results"]
    assert [r["content"] for r in scoped] == ["Deployment went badly yesterday"]


def test_reflect_consolidates_and_reports(api, bank):
    bank.dedup_threshold = 0.9
    bank.save()
    tool(api, "memory_add", content="Alice drinks green tea every morning at seven.")
    tool(api, "memory_add", content="Alice drinks green tea every morning at seven!")
    tool(api, "memory_add", content="ok")
    result = tool(api, "memory_reflect")
    assert result["pruned"] == 1 and result["merged"] == 1
    assert {"pruned", "merged", "derived", "compacted", "durationMs"} <= set(result)


def test_astrocyte_tools_over_rest(api):
    retained = tool(api, "memory_retain", content="Alice likes jazz.", tags=["music"])
    assert retained["stored"] is True
    assert tool(api, "memory_recall", query="jazz")["hits"][0]["memory_id"] == retained["memory_id"]
    assert "jazz" in tool(api, "memory_reflect", query="What does Alice like?")["answer"]
    directive = tool(api, "memory_create_directive", rule_text="Answer briefly.")
    assert directive["kind"] == "directive" and directive["revision"] == 1
    made = tool(api, "memory_create_mental_model", model_id="m", title="M", content="## A\n\nx")
    assert made == {"model_id": "m", "revision": 1, "kind": "general", "title": "M"}
    updated = tool(api, "memory_update_mental_model", model_id="m",
                   operations=[{"op": "rename_section", "section_id": "a", "new_heading": "B"}])
    assert updated["changed"] is True and updated["revision"] == 2
    listed = tool(api, "memory_list_mental_models")["models"]
    assert {m["model_id"] for m in listed} >= {"m"} and "source_count" in listed[0]
    obs = tool(api, "memory_create_observation", text="Jazz fan.", source_ids=[retained["memory_id"]])
    oid = obs["observation"]["id"]
    assert tool(api, "memory_get_observation", observation_id=oid)["observation"]["trend"] == "new"
    assert [o["id"] for o in tool(api, "memory_list_observations")["observations"]] == [oid]
    assert tool(api, "memory_delete_observation", observation_id=oid) == {"deleted": True}
    assert tool(api, "memory_delete_mental_model", model_id="m") == {"deleted": True}
    assert tool(api, "memory_forget", memory_ids=[retained["memory_id"]])["deleted_count"] == 1


# Arguments naming real objects (see ``objects``), so an allowed call must succeed: a 404 is a failure.
ARGS: dict[str, Callable[[dict[str, str]], dict[str, Any]]] = {
    "memory_retain": lambda o: {"content": "Dana moved to the Lisbon office."},
    "memory_recall": lambda o: {"query": "tea"}, "memory_reflect": lambda o: {"query": "tea"},
    "memory_forget": lambda o: {"memory_ids": [o["c"]]},
    "memory_create_directive": lambda o: {"rule_text": "Be kind."},
    "memory_list_observations": lambda o: {}, "memory_get_observation": lambda o: {"observation_id": o["obs"]},
    "memory_create_observation": lambda o: {"text": "Bob cycles to work."},
    "memory_delete_observation": lambda o: {"observation_id": o["obs"]},
    "memory_list_mental_models": lambda o: {},
    "memory_create_mental_model": lambda o: {"model_id": "m2", "title": "t", "content": "c"},
    "memory_update_mental_model": lambda o: {"model_id": "prefs",
                                             "operations": [{"op": "add_section", "heading": "Food"}]},
    "memory_delete_mental_model": lambda o: {"model_id": "prefs"},
    "memory_add": lambda o: {"content": "Erin prefers morning meetings."},
    "memory_update": lambda o: {"traceId": o["a"], "content": "Alice likes green tea."},
    "memory_delete": lambda o: {"traceId": o["c"]},
    "memory_merge": lambda o: {"traceIds": [o["a"], o["b"]]}, "memory_search": lambda o: {"query": "tea"},
    "memory_history": lambda o: {"query": "tea", "as_of": "2030-01-01"},
    "memory_audit": lambda o: {"scope": "drinks"}, "memory_compile": lambda o: {},
    "memory_graph_search": lambda o: {"query": "Alice"},
    "memory_graph_neighbors": lambda o: {"entity_ids": ["alice"]},
    "memory_refresh_mental_model": lambda o: {"model_id": "prefs", "new_source_ids": [o["a"]]},
    "memory_lifecycle": lambda o: {}, "memory_bank_health": lambda o: {},
    "memory_hold_set": lambda o: {"hold_id": "h", "reason": "litigation"},
    "memory_hold_release": lambda o: {"hold_id": o["hold"]},
}


@pytest.fixture
def objects(bank) -> dict[str, str]:
    ids = {key: memory_retain(bank=bank, text=text, actor="test", near_dedup=False).memory_id or ""
           for key, text in (("a", "Alice likes tea."), ("b", "Alice drinks tea every morning."),
                             ("c", "Carol's flight lands at 6 pm."))}
    observation = observation_create(bank=bank, text="Alice is a tea drinker.", actor="test", source_ids=[ids["a"]])
    mental_model_create(bank=bank, model_id="prefs", title="Preferences", actor="test",
                        content="# Preferences\n\n## Drinks\n\nTea.")
    return {**ids, "obs": observation.observation_id, "hold": "h0"}


def test_every_tool_has_a_permission_case():
    assert set(ARGS) == set(TOOLS)


@pytest.mark.parametrize("name", sorted(ARGS))
def test_every_tool_enforces_its_permission(objects, make_token, name):
    permission = TOOLS[name].permission
    if name == "memory_hold_release":  # a hold to release (others would block the forget tools)
        hold_set(bank=Bank.objects.get(bank_id="user-alice"), hold_id="h0", reason="audit", set_by="test",
                 actor="test")
    body = {**B, **ARGS[name](objects)}
    assert ApiClient().post(f"/v1/agent/{name}", body).status_code == 401
    others = [p for p in ("read", "write", "forget", "admin") if p != permission]
    denied = ApiClient(make_token({"user-alice": others})).post(f"/v1/agent/{name}", body)
    assert denied.status_code == 403, denied.content
    other_bank = ApiClient(make_token({"user-bob": ["*"]})).post(f"/v1/agent/{name}", body)
    assert other_bank.status_code == 403
    allowed = ApiClient(make_token({"user-alice": [permission]})).post(f"/v1/agent/{name}", body)
    assert allowed.status_code == 200, allowed.content
    assert allowed.json() not in ({"updated": False}, {"deleted": False}), allowed.content


def test_reflect_without_a_query_is_a_write(bank, make_token):
    reader = ApiClient(make_token({"user-alice": ["read"]}))
    assert reader.post("/v1/agent/memory_reflect", B).status_code == 403
    writer = ApiClient(make_token({"user-alice": ["write"]}))
    assert writer.post("/v1/agent/memory_reflect", B).status_code == 200


def test_bankless_tools_over_rest(api, make_bank):
    make_bank("user-bob")
    assert ApiClient().post("/v1/agent/memory_banks", {}).status_code == 401
    assert api.post("/v1/agent/memory_banks", {}).json() == {"banks": ["user-alice"], "default": None}
    assert api.post("/v1/agent/memory_health", {}).json()["healthy"] is True


def test_tool_list(api):
    names = {t["name"] for t in api.get("/v1/agent/tools").json()["tools"]}
    assert {"memory_banks", "memory_health", "memory_hold_set", "memory_lifecycle"} <= names
    assert {"memory_add", "memory_update", "memory_delete", "memory_merge", "memory_search", "memory_reflect",
            "memory_create_directive", "memory_list_observations"} <= names
