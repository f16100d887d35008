"""Input no store can hold is a 400 naming the field, on every surface, and never breaks a bank.

Each case here once answered 500, and the out-of-range times left a bank that answered 500 on
every later read until repaired by hand.
"""

from __future__ import annotations

import json

import pytest

from banks.models import Memory

BAD_TIMES = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00", "2024-01-01T00:00:00+23:00"]


@pytest.mark.parametrize("when", BAD_TIMES)
def test_retain_refuses_a_time_no_reader_can_show(api, when):
    response = api.post("/v1/retain", {"content": "a", "bank_id": "user-alice", "occurred_at": when})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == "occurred_at"
    assert not Memory.objects.exists()


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v1/recall", {"query": "x", "bank_id": "user-alice", "as_of": "0001-01-01T00:00:00+14:00"}, "as_of"),
    ("/v1/recall", {"query": "x", "bank_id": "user-alice",
                    "time_range": {"start": "9999-12-31T23:59:59-12:00"}}, "time_range"),
    ("/v1/history", {"query": "x", "bank_id": "user-alice", "as_of": "0001-01-01T00:00:00+01:00"}, "as_of"),
    ("/v1/forget", {"bank_id": "user-alice", "before_date": "9999-12-31T23:59:59-12:00"}, "before_date"),
])
def test_every_time_field_is_held_to_the_same_rule(api, path, body, field):
    response = api.post(path, body)
    assert response.status_code == 400, response.content
    assert field in response.json()["detail"]


def test_times_are_stored_in_utc(api):
    response = api.post("/v1/retain", {"content": "met Bob", "bank_id": "user-alice",
                                       "occurred_at": "2024-03-01T09:00:00+05:30"})
    assert response.status_code == 200
    memory = Memory.objects.get()
    assert memory.occurred_at.utcoffset().total_seconds() == 0
    assert memory.occurred_at.isoformat() == "2024-03-01T03:30:00+00:00"


NUL = "a\x00b"


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v1/retain", {"content": NUL, "bank_id": "user-alice"}, "content"),
    ("/v1/retain", {"content": "x", "bank_id": "user-alice", "tags": [NUL]}, "tags[0]"),
    ("/v1/retain", {"content": "x", "bank_id": "user-alice", "metadata": {NUL: 1}}, "metadata"),
    ("/v1/retain", {"content": "x", "bank_id": "user-alice", "metadata": {"k": NUL}}, "metadata.k"),
    ("/v1/retain", {"content": "x", "bank_id": "user-alice", "source": NUL}, "source"),
    ("/v1/retain", {"content": "x", "bank_id": NUL}, "bank_id"),
    ("/v1/recall", {"query": NUL, "bank_id": "user-alice"}, "query"),
    ("/v1/observations", {"text": NUL, "bank_id": "user-alice"}, "text"),
    ("/v1/directives", {"rule_text": NUL, "bank_id": "user-alice"}, "rule_text"),
    ("/v1/mental-models", {"model_id": "m", "title": NUL, "content": "c", "bank_id": "user-alice"}, "title"),
    ("/v1/mental-models", {"model_id": NUL, "title": "t", "content": "c", "bank_id": "user-alice"}, "model_id"),
    ("/v1/forget", {"bank_id": "user-alice", "memory_ids": [NUL]}, "memory_ids[0]"),
])
def test_nul_characters_are_refused_naming_the_field(api, path, body, field):
    response = api.post(path, body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == field
    assert "NUL" in response.json()["detail"]


def test_a_lone_surrogate_is_refused(api):
    # json.dumps writes the surrogate as the escape \ud800, exactly what a hostile client sends.
    response = api.post("/v1/retain", json.dumps({"content": "x\ud800y", "bank_id": "user-alice"}))
    assert response.status_code == 400
    assert "surrogate" in response.json()["detail"]
    assert not Memory.objects.exists()


@pytest.mark.parametrize("depth", [40, 5000])
def test_deep_nesting_is_refused(api, depth):
    body = '{"content": "x", "bank_id": "user-alice", "metadata": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
    response = api.post("/v1/retain", body)
    assert response.status_code == 400, response.content
    assert not Memory.objects.exists()


@pytest.mark.parametrize("priority", [2**31, -(2**31) - 1, 2**70])
def test_a_directive_priority_beyond_32_bits_is_refused(api, priority):
    response = api.post("/v1/directives", {"rule_text": "Be brief.", "bank_id": "user-alice", "priority": priority})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == "priority"


@pytest.mark.parametrize("tool", ["memory_update", "memory_delete", "memory_merge"])
def test_agent_tools_without_trace_ids_are_a_400(api, tool):
    response = api.post(f"/v1/agent/{tool}", {"bank_id": "user-alice", "content": "x"})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] in {"traceId", "traceIds"}


def test_agent_tools_hold_times_and_text_to_the_same_rules(api):
    bad_time = api.post("/v1/agent/memory_retain", {"bank_id": "user-alice", "content": "x",
                                                     "occurred_at": "0001-01-01T00:00:00+14:00"})
    assert bad_time.status_code == 400 and "occurred_at" in bad_time.json()["detail"]
    unreadable = api.post("/v1/agent/memory_retain", {"bank_id": "user-alice", "content": "x",
                                                       "occurred_at": "next tuesday"})
    assert unreadable.status_code == 400 and unreadable.json()["error"]["field"] == "occurred_at"
    nul = api.post("/v1/agent/memory_add", {"bank_id": "user-alice", "content": NUL})
    assert nul.status_code == 400
    assert not Memory.objects.exists()


@pytest.mark.parametrize("bank_id", ["bad bank", "-leading", "a/b", "x" * 256, "trailing\n"])
def test_an_invalid_bank_id_is_a_400_before_any_lookup(api_for, bank_id):
    client = api_for({"*": ["read", "write"]})
    for response in (client.post("/v1/recall", {"query": "x", "bank_id": bank_id}),
                     client.post("/v1/retain", {"content": "x", "bank_id": bank_id})):
        assert response.status_code == 400, response.content
        assert response.json()["detail"].startswith("Invalid bank_id")


def test_a_bank_with_a_bad_row_still_answers_after_the_refusals(api):
    """The bank stays usable: every read after the refused writes works."""
    for when in BAD_TIMES:
        api.post("/v1/retain", {"content": f"at {when}", "bank_id": "user-alice", "occurred_at": when})
    assert api.post("/v1/retain", {"content": "fine", "bank_id": "user-alice"}).status_code == 200
    assert api.post("/v1/recall", {"query": "fine", "bank_id": "user-alice"}).status_code == 200
    assert api.post("/v1/forget", {"bank_id": "user-alice", "scope": "all"}).status_code == 200
