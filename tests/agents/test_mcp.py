"""A real MCP client session against the running MCP server (streamable HTTP on localhost)."""

from __future__ import annotations

import asyncio

import httpx

from banks.models import Memory
from tests.fakes import session_calls


def test_tools_through_a_real_mcp_session(mcp_url, make_bank, make_token):
    make_bank("user-alice")
    token = make_token({"user-alice": ["read", "write", "forget"]})
    calls = [
        ("memory_retain", {"content": "Alice likes jazz.", "bank_id": "user-alice", "tags": ["music"]}),
        ("memory_recall", {"query": "jazz", "bank_id": "user-alice"}),
        ("memory_add", {"content": "User prefers dark mode.", "bank_id": "user-alice", "type": "semantic"}),
        ("memory_search", {"query": "dark mode", "bank_id": "user-alice"}),
        ("memory_create_directive", {"rule_text": "Answer briefly.", "bank_id": "user-alice"}),
        ("memory_create_mental_model", {"model_id": "m", "title": "T", "content": "## A\n\nx",
                                        "bank_id": "user-alice"}),
        ("memory_update_mental_model", {"model_id": "m", "bank_id": "user-alice",
                                        "operations": [{"op": "add_section", "heading": "B"}]}),
        ("memory_list_mental_models", {"bank_id": "user-alice"}),
        ("memory_create_observation", {"text": "Likes jazz.", "bank_id": "user-alice"}),
        ("memory_list_observations", {"bank_id": "user-alice"}),
        ("memory_reflect", {"query": "What does Alice like?", "bank_id": "user-alice"}),
        ("memory_forget", {"memory_ids": ["nope"], "bank_id": "user-bob"}),
    ]
    tools, results = asyncio.run(session_calls(mcp_url, token, calls))
    assert {"memory_retain", "memory_recall", "memory_reflect", "memory_forget", "memory_create_directive",
            "memory_list_observations", "memory_get_observation", "memory_create_observation",
            "memory_delete_observation", "memory_list_mental_models", "memory_create_mental_model",
            "memory_update_mental_model", "memory_delete_mental_model", "memory_add", "memory_update",
            "memory_delete", "memory_merge", "memory_search"} <= set(tools)
    retained, recalled, added, searched, directive, model, updated, models, obs, observations, reflect, denied = \
        results
    assert retained["stored"] is True
    # The directive authored later is not there yet; the memory is the first hit.
    assert recalled["hits"][0]["memory_id"] == retained["memory_id"]
    assert searched["results"][0]["id"] == added["traceId"]
    assert directive["kind"] == "directive"
    assert model["revision"] == 1 and updated == {"changed": True, "revision": 2, "applied": [
        {"op": "add_section", "heading": "B", "level": 2, "after_section_id": None, "new_id": None, "assigned_id": "b"}], "skipped": []}
    assert [m["model_id"] for m in models["models"]] and observations["observations"][0]["text"] == "Likes jazz."
    assert reflect["directives"] == ["Answer briefly."] and "jazz" in reflect["answer"]
    assert denied["error"] == "AccessDenied" and denied["isError"] is True and denied["status"] == 403
    assert Memory.objects.filter(bank__bank_id="user-alice").count() == 2


def test_mcp_without_a_valid_token_is_refused(mcp_url, make_bank):
    response = httpx.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 401
    bad = httpx.post(mcp_url, json={}, headers={"Authorization": "Bearer mh_nope_nope"})
    assert bad.status_code == 401 and bad.json()["detail"] == "Invalid or revoked token"


def test_mcp_enforces_permissions_per_tool(mcp_url, make_bank, make_token):
    make_bank("user-alice")
    reader = make_token({"user-alice": ["read"]})
    _, results = asyncio.run(session_calls(mcp_url, reader, [
        ("memory_retain", {"content": "x", "bank_id": "user-alice"}),
        ("memory_recall", {"query": "x", "bank_id": "user-alice"}),
        ("memory_delete", {"traceId": "x", "bank_id": "user-alice"}),
    ]))
    assert results[0]["error"] == "AccessDenied" and results[0]["isError"] is True
    assert "hits" in results[1] and "isError" not in results[1]
    assert results[2]["error"] == "AccessDenied" and results[2]["isError"] is True


def test_mcp_refuses_unstorable_arguments_as_error_results(mcp_url, make_bank, make_token):
    make_bank("user-alice")
    token = make_token({"user-alice": ["read", "write", "forget"]})
    _, results = asyncio.run(session_calls(mcp_url, token, [
        ("memory_retain", {"content": "nul\x00byte", "bank_id": "user-alice"}),
        ("memory_retain", {"content": "x", "bank_id": "user-alice", "occurred_at": "0001-01-01T00:00:00+14:00"}),
    ]))
    assert [r["error"] for r in results] == ["InvalidInput", "InvalidInput"]
    assert all(r["isError"] is True and r["status"] == 400 for r in results)
    assert "NUL" in results[0]["detail"] and "occurred_at" in results[1]["detail"]
    assert Memory.objects.filter(bank__bank_id="user-alice").count() == 0
