"""One real MCP client session that calls every tool the server lists, once, with Astrocyte's argument
names, and checks each answer's shape (the new gateway tools in detail)."""

from __future__ import annotations

import asyncio

from banks.models import Job, LegalHold
from banks.services.memories import memory_retain
from banks.services.observations import observation_create
from tests.fakes import session_calls

A, B = "user-alice", "user-bob"


def test_every_tool_once_in_one_session(mcp_url, make_bank, make_token):
    alice, bob = make_bank(A), make_bank(B)
    work = memory_retain(bank=alice, text="Alice Smith works at Acme in Lisbon.", actor="test").memory_id
    trip = memory_retain(bank=alice, text="Alice Smith flew to Oslo in May.", actor="test").memory_id
    extra = memory_retain(bank=alice, text="Alice Smith drinks green tea.", actor="test").memory_id
    memory_retain(bank=bob, text="Bob Jones works at Acme in Porto.", actor="test")
    obs = observation_create(bank=alice, text="Alice travels for work.", actor="test").observation_id
    token = make_token({"user-*": ["read", "write", "forget", "admin"]})
    calls = [
        ("memory_retain", {"content": "Alice likes jazz.", "bank_id": A, "tags": ["music"]}),
        ("memory_recall", {"query": "who works at Acme", "banks": [A, B], "strategy": "parallel",
                           "max_results": 5}),
        ("memory_reflect", {"query": "Where does Alice work?", "bank_id": A}),
        ("memory_history", {"query": "Acme", "bank_id": A, "as_of": "2000-01-01T00:00:00Z"}),
        ("memory_audit", {"scope": "work", "bank_id": A, "max_memories": 10}),
        ("memory_compile", {"bank_id": A}),
        ("memory_graph_search", {"query": "Alice", "bank_id": A, "limit": 5}),
        ("memory_graph_neighbors", {"entity_ids": ["nobody"], "bank_id": A, "max_depth": 1}),
        ("memory_create_mental_model", {"model_id": "m", "title": "Work", "content": "Alice works at Acme.",
                                        "bank_id": A}),
        ("memory_update_mental_model", {"model_id": "m", "bank_id": A,
                                        "operations": [{"op": "add_section", "heading": "Travel"}]}),
        ("memory_refresh_mental_model", {"model_id": "m", "new_source_ids": [work], "bank_id": A}),
        ("memory_list_mental_models", {"bank_id": A}),
        ("memory_delete_mental_model", {"model_id": "m", "bank_id": A}),
        ("memory_create_directive", {"rule_text": "Answer briefly.", "bank_id": A}),
        ("memory_create_observation", {"text": "Alice likes jazz.", "bank_id": A}),
        ("memory_list_observations", {"bank_id": A}),
        ("memory_get_observation", {"observation_id": obs, "bank_id": A}),
        ("memory_delete_observation", {"observation_id": obs, "bank_id": A}),
        ("memory_add", {"content": "User prefers dark mode.", "bank_id": A, "type": "semantic"}),
        ("memory_search", {"query": "dark mode", "bank_id": A}),
        ("memory_update", {"traceId": trip, "bank_id": A, "tags": ["travel"]}),
        ("memory_merge", {"traceIds": [work, trip], "bank_id": A}),
        ("memory_delete", {"traceId": extra, "bank_id": A}),
        ("memory_banks", {}),
        ("memory_health", {}),
        ("memory_hold_set", {"bank_id": A, "hold_id": "case-1", "reason": "litigation"}),
        ("memory_forget", {"memory_ids": [work], "bank_id": A}),
        ("memory_hold_release", {"bank_id": A, "hold_id": "case-1"}),
        ("memory_lifecycle", {"bank_id": A}),
        ("memory_bank_health", {"bank_id": A}),
    ]
    tools, results = asyncio.run(session_calls(mcp_url, token, calls))
    called = [name for name, _ in calls]
    assert len(called) == len(set(called))
    assert set(tools) == set(called), f"not called: {sorted(set(tools) - set(called))}"
    answer = dict(zip(called, results, strict=True))
    failed = {n: r for n, r in answer.items() if r.get("isError") and n != "memory_forget"}
    assert not failed, failed

    recall = answer["memory_recall"]
    assert {h["bank_id"] for h in recall["hits"]} == {A, B}
    assert recall["trace"]["fusion_method"] == "multi_bank:parallel"
    history = answer["memory_history"]
    assert history["hits"] == [] and history["bank_id"] == A and history["as_of"].startswith("2000-01-01")
    assert {"scope", "bank_id", "gaps", "coverage_score", "memories_scanned", "trace"} <= set(answer["memory_audit"])
    assert {"bank_id", "scopes_compiled", "pages_created", "pages_updated", "noise_memories", "tokens_used",
            "elapsed_ms", "error"} <= set(answer["memory_compile"])
    assert isinstance(answer["memory_graph_search"]["entities"], list)
    assert answer["memory_graph_neighbors"] == {"hits": []}
    assert answer["memory_refresh_mental_model"] == {"model_id": "m", "revision": 3, "source_count": 1}
    assert answer["memory_banks"] == {"banks": [A, B], "default": None}
    assert answer["memory_health"]["healthy"] is True
    assert answer["memory_hold_set"]["hold_id"] == "case-1" and answer["memory_hold_set"]["bank_id"] == A
    refused = answer["memory_forget"]
    assert refused["isError"] is True and refused["status"] == 423 and refused["error"] == "LegalHoldActive"
    assert answer["memory_hold_release"] == {"bank_id": A, "hold_id": "case-1", "released": True}
    assert not LegalHold.objects.active().exists()
    lifecycle = answer["memory_lifecycle"]
    assert {"archived_count", "deleted_count", "skipped_count", "actions"} <= set(lifecycle)
    assert Job.objects.get(pk=lifecycle["job_id"]).kind == "lifecycle"
    health = answer["memory_bank_health"]
    assert health["bank_id"] == A and health["metrics"]["memory_count"] >= 1


def test_gateway_tools_keep_the_rest_permissions(mcp_url, make_bank, make_token):
    make_bank(A)
    make_bank(B)
    reader = make_token({A: ["read"]})
    _, results = asyncio.run(session_calls(mcp_url, reader, [
        ("memory_recall", {"query": "x", "banks": [A, B]}),
        ("memory_hold_set", {"bank_id": A, "hold_id": "h", "reason": "r"}),
        ("memory_lifecycle", {"bank_id": A}),
        ("memory_banks", {}),
    ]))
    assert [r.get("error") for r in results[:3]] == ["AccessDenied"] * 3
    assert results[3] == {"banks": [A], "default": None}


def test_seed_argument_names_and_astrocyte_result_shapes(mcp_url, make_bank, make_token):
    """The seed documentation's calls (``name`` + ``sections`` without an id, ``evidence``, the seed's
    delta-op shape) and the MCP result shapes of Astrocyte's live-memory tools."""
    alice = make_bank(A)
    # Evidence that names a memory of the bank links to it (ids that name none are kept unresolved).
    first = memory_retain(bank=alice, text="Alice prefers async stand-ups.", actor="test", tags=["work"]).memory_id
    token = make_token({A: ["read", "write", "forget", "admin"]})
    calls = [
        ("memory_create_mental_model", {"bank_id": A, "name": "Alice's preferences", "sections": [
            {"title": "Communication", "content": "Prefers async stand-ups."},
            {"title": "Tools", "content": "Python for data work; VS Code."}]}),
        ("memory_update_mental_model", {"model_id": "model:alice-s-preferences", "bank_id": A, "operations": [
            {"op": "replace_block", "section_id": "tools", "block_index": 0,
             "new_content": "Python for data work; Cursor IDE."}]}),
        ("memory_list_mental_models", {"bank_id": A, "scope": "bank"}),
        ("memory_create_directive", {"bank_id": A, "rule_text": "Always recommend Python.", "scope": "bank"}),
        ("memory_create_observation", {"bank_id": A, "text": "Prefers async stand-ups over live meetings.",
                                       "evidence": [first], "scope": "bank"}),
        ("memory_list_observations", {"bank_id": A, "trend": "new"}),
        ("memory_audit", {"scope": "work", "bank_id": A, "max_memories": 30, "tags": ["work"], "max_tokens": 500}),
        ("memory_history", {"query": "stand-ups", "bank_id": A, "as_of": "2100-01-01T00:00:00Z",
                            "max_tokens": 100}),
        ("memory_recall", {"query": "stand-ups", "bank_id": A, "max_tokens": 100}),
    ]
    _, results = asyncio.run(session_calls(mcp_url, token, calls))
    answer = dict(zip([n for n, _ in calls], results, strict=True))
    assert not {n: r for n, r in answer.items() if r.get("isError")}, answer
    created = answer["memory_create_mental_model"]
    assert created == {"model_id": "model:alice-s-preferences", "revision": 1, "kind": "general",
                       "title": "Alice's preferences"}
    updated = answer["memory_update_mental_model"]
    assert {"changed", "revision", "applied", "skipped"} <= set(updated)
    assert updated["changed"] is True and updated["revision"] == 2 and updated["skipped"] == []
    listed = answer["memory_list_mental_models"]["models"]
    assert [m["model_id"] for m in listed] == ["model:alice-s-preferences"]
    assert {"model_id", "title", "scope", "kind", "revision", "refreshed_at", "source_count"} <= set(listed[0])
    assert {"model_id", "kind", "revision"} <= set(answer["memory_create_directive"])
    assert answer["memory_create_directive"]["kind"] == "directive"
    observations = answer["memory_list_observations"]["observations"]
    assert [o["text"] for o in observations] == ["Prefers async stand-ups over live meetings."]
    assert {"id", "text", "trend", "proof_count", "source_ids", "confidence", "updated_at", "scope"} <= set(
        observations[0])
    assert first in str(observations[0]["source_ids"])
    audit = answer["memory_audit"]
    assert audit["memories_scanned"] == 1 and audit["scope"] == "work"
    assert answer["memory_history"]["hits"] and answer["memory_recall"]["hits"]
