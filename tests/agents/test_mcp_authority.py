"""The privileged tools over MCP give each role the answer the other surfaces give
(tests/banks/test_authority_matrix.py drives REST, the agent routes, the pages, bulk and the admin)."""

from __future__ import annotations

import asyncio

import pytest

from banks.access import ROLE_PERMISSIONS
from banks.models import BankRole, LegalHold, LifecyclePolicy, Memory
from banks.services.holds import hold_set
from banks.services.memories import memory_retain
from tests.fakes import session_calls

B = "team-one"


@pytest.mark.parametrize("role", [BankRole.VIEWER, BankRole.CURATOR, BankRole.ADMIN])
def test_privileged_tools_over_mcp(mcp_url, make_bank, make_token, role):  # noqa: F811
    bank = make_bank(B)
    memory = memory_retain(bank=bank, text="Alice asked to be forgotten.", actor="test").memory
    hold_set(bank=bank, hold_id="case-1", reason="litigation", set_by="test", actor="test")
    LifecyclePolicy.objects.create(bank=bank, enabled=True, delete_after_days=3650)
    perms = ROLE_PERMISSIONS[role]
    token = make_token({B: sorted(perms)})
    calls = [
        ("memory_hold_set", {"bank_id": B, "hold_id": "case-9", "reason": "litigation"}),
        ("memory_hold_release", {"bank_id": B, "hold_id": "case-1"}),
        ("memory_lifecycle", {"bank_id": B}),
        ("memory_forget", {"bank_id": B, "memory_ids": [memory.memory_id]}),
    ]
    _, results = asyncio.run(session_calls(mcp_url, token, calls))
    admin = "admin" in perms
    for (name, _), result in zip(calls[:3], results[:3], strict=True):
        assert (result.get("status") == 403) is not admin, (name, result)
    assert LegalHold.objects.active().filter(bank=bank, hold_id="case-9").exists() is admin
    assert LegalHold.objects.active().filter(bank=bank, hold_id="case-1").exists() is not admin
    # Forget needs forget; a held bank (case-1, or the admin's own case-9) then refuses it with 423.
    assert results[3]["status"] == (423 if "forget" in perms else 403)
    assert Memory.objects.get(pk=memory.pk).forgotten_at is None
