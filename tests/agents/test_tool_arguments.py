"""Every agent tool's arguments are one pydantic model: a wrong type is a 400 naming the field on REST,
the same refusal over MCP, and each tool is its own operation, with its model as the body, in OpenAPI."""

from __future__ import annotations

import asyncio

import pytest

from agents.tool_args import ARGUMENTS, schema_name
from agents.toolbox import BANKLESS, TOOLS
from tests.fakes import session_calls

pytestmark = pytest.mark.django_db

A = "a-one"
# (tool, arguments with one wrong-typed field, that field)
WRONG_TYPES = [
    ("memory_list_observations", {"bank_id": A, "limit": "x"}, "limit"),
    ("memory_recall", {"bank_id": A, "query": "q", "max_results": "many"}, "max_results"),
    ("memory_recall", {"bank_id": A, "query": "q", "max_tokens": [1]}, "max_tokens"),
    ("memory_search", {"bank_id": A, "query": "q", "limit": {"n": 1}}, "limit"),
    ("memory_history", {"bank_id": A, "query": "q", "as_of": "2030-01-01", "max_results": "x"}, "max_results"),
    ("memory_audit", {"bank_id": A, "scope": "s", "max_memories": "x"}, "max_memories"),
    ("memory_graph_search", {"bank_id": A, "query": "q", "limit": 1.5}, "limit"),
    ("memory_graph_neighbors", {"bank_id": A, "entity_ids": "alice"}, "entity_ids"),
    ("memory_graph_neighbors", {"bank_id": A, "entity_ids": ["a"], "max_depth": "deep"}, "max_depth"),
    ("memory_create_observation", {"bank_id": A, "text": "t", "confidence": "high"}, "confidence"),
    ("memory_update_mental_model", {"bank_id": A, "model_id": "m", "operations": "add"}, "operations"),
    ("memory_update_mental_model", {"bank_id": A, "model_id": "m", "operations": [], "expected_revision": "x"},
     "expected_revision"),
    ("memory_retain", {"bank_id": A, "content": "c", "tags": "music"}, "tags"),
    ("memory_retain", {"bank_id": A, "content": "c", "metadata": ["x"]}, "metadata"),
    ("memory_forget", {"bank_id": A, "memory_ids": 7}, "memory_ids"),
    ("memory_merge", {"bank_id": A, "traceIds": "a,b"}, "traceIds"),
    ("memory_hold_set", {"bank_id": A, "hold_id": ["h"], "reason": "r"}, "hold_id"),
    ("memory_refresh_mental_model", {"bank_id": A, "model_id": "m", "new_source_ids": "x"}, "new_source_ids"),
    ("memory_reflect", {"bank_id": A, "query": "q", "max_tokens": "x"}, "max_tokens"),
]


@pytest.mark.parametrize(("name", "args", "field"), WRONG_TYPES, ids=[f"{n}-{f}" for n, _, f in WRONG_TYPES])
def test_a_wrong_type_is_a_400_naming_the_field(api_for, make_bank, name, args, field):
    make_bank(A)
    client = api_for({A: ["read", "write", "forget", "admin"]})
    response = client.post(f"/v1/agent/{name}", args)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"]["field"] == field and field in body["detail"]


def test_a_missing_argument_is_a_400_naming_it(api_for, make_bank):
    make_bank(A)
    client = api_for({A: ["read"]})
    response = client.post("/v1/agent/memory_get_observation", {"bank_id": A})
    assert response.status_code == 400 and response.json()["error"]["field"] == "observation_id"


def test_mcp_refuses_the_same_arguments(mcp_url, make_bank, make_token):
    make_bank(A)
    token = make_token({A: ["read"]})
    _, results = asyncio.run(session_calls(mcp_url, token, [
        ("memory_list_observations", {"bank_id": A, "limit": "x"}),
        ("memory_list_observations", {"bank_id": A, "limit": "3"}),
    ]))
    assert results[0].get("isError") is True and "limit" in str(results[0])
    assert results[1] == {"observations": []}


def test_mcp_publishes_each_tools_model():
    from agents.mcp_server import server

    listed = {tool.name: tool for tool in asyncio.run(server.list_tools())}
    assert set(listed) == set(ARGUMENTS) == {*TOOLS, *BANKLESS}
    for name, model in ARGUMENTS.items():
        schema = listed[name].input_schema
        assert set(schema["properties"]) == set(model.model_fields), name
        assert set(schema.get("required", [])) == {f for f, info in model.model_fields.items() if info.is_required()}


def test_every_tool_is_an_operation_with_its_model_as_body(client):
    document = client.get("/v1/openapi.json").json()
    assert "/v1/agent/{name}" not in document["paths"]
    for name in ARGUMENTS:
        operation = document["paths"][f"/v1/agent/{name}"]["post"]
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert ref == f"#/components/schemas/{schema_name(name)}"
        schema = document["components"]["schemas"][schema_name(name)]
        assert set(schema["properties"]) == set(ARGUMENTS[name].model_fields)
        assert "400" in operation["responses"]
    limit = document["components"]["schemas"][schema_name("memory_list_observations")]["properties"]["limit"]
    assert limit["type"] == "integer"
