"""One per-token request budget for every surface: REST, the agent routes and MCP count together, and
the tool that lists banks names only the banks the token may read."""

from __future__ import annotations

import httpx
import pytest

from banks.api.throttling import TokenRateThrottle

A = "user-alice"


@pytest.fixture
def rate():
    def set_rate(value: str) -> None:
        TokenRateThrottle.THROTTLE_RATES = {"token": value}

    yield set_rate
    from rest_framework.settings import api_settings

    TokenRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES


def _mcp_call(url: str, token: str, name: str, arguments: dict) -> httpx.Response:
    return httpx.post(url, headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": name, "arguments": arguments}}, timeout=30)


def test_mcp_calls_are_counted_and_refused_over_the_limit(mcp_url, make_bank, make_token, rate):
    make_bank(A)
    token = make_token({A: ["read"]})
    rate("5/min")
    codes = [_mcp_call(mcp_url, token, "memory_recall", {"query": "x", "bank_id": A}).status_code for _ in range(8)]
    assert codes == [200] * 5 + [429] * 3
    refused = _mcp_call(mcp_url, token, "memory_health", {})
    assert refused.json()["error"]["code"] == "rate_limited" and 1 <= int(refused.headers["Retry-After"]) <= 60


def test_rest_agent_routes_and_mcp_share_one_budget(mcp_url, make_bank, make_token, rate):
    from tests.conftest import ApiClient

    make_bank(A)
    token = make_token({A: ["read"]})
    other = make_token({A: ["read"]})
    rate("4/min")
    client = ApiClient(token)
    assert client.post("/v1/recall", {"query": "x", "bank_id": A}).status_code == 200
    assert client.post("/v1/agent/memory_recall", {"query": "x", "bank_id": A}).status_code == 200
    assert _mcp_call(mcp_url, token, "memory_recall", {"query": "x", "bank_id": A}).status_code == 200
    assert client.post("/v1/recall", {"query": "x", "bank_id": A}).status_code == 200
    # The budget of four is spent, whichever surface asks next.
    assert _mcp_call(mcp_url, token, "memory_recall", {"query": "x", "bank_id": A}).status_code == 429
    assert client.post("/v1/agent/memory_recall", {"query": "x", "bank_id": A}).status_code == 429
    assert client.post("/v1/recall", {"query": "x", "bank_id": A}).status_code == 429
    # Another token has its own.
    assert _mcp_call(mcp_url, other, "memory_recall", {"query": "x", "bank_id": A}).status_code == 200


@pytest.mark.django_db
def test_memory_banks_needs_read(api_for, make_bank):
    make_bank(A)
    make_bank("user-bob")
    write_only = api_for({"user-*": ["write"]})
    refused = write_only.post("/v1/agent/memory_banks", {})
    assert refused.status_code == 403 and "user-" not in refused.json()["detail"]
    mixed = api_for({A: ["read"], "user-bob": ["write"]})
    assert mixed.post("/v1/agent/memory_banks", {}).json()["banks"] == [A]
