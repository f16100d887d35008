from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from banks.models import ApiToken, AuditEvent, BankMembership
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db


def test_create_api_token_prints_the_secret_once_and_it_works(bank):
    out, err = StringIO(), StringIO()
    call_command("create_api_token", "--name", "agent", "--bank", "user-*", "--permissions", "read,write",
                 stdout=out, stderr=err)
    secret = out.getvalue().strip()
    token = ApiToken.objects.get()
    assert token.grants == [{"bank": "user-*", "permissions": ["read", "write"]}]
    assert "not shown again" in err.getvalue()
    assert ApiClient(secret).post("/v1/recall", {"query": "x", "bank_id": "user-alice"}).status_code == 200
    assert AuditEvent.objects.filter(action="token.create").exists()


def test_create_api_token_with_a_principal_stamps_what_it_retains(bank):
    out = StringIO()
    call_command("create_api_token", "--name", "triage", "--bank", "user-alice", "--principal", "agent:triage",
                 stdout=out, stderr=StringIO())
    body = ApiClient(out.getvalue().strip()).post("/v1/retain", {"bank_id": "user-alice", "content": "Ticket 7 is urgent."})
    assert body.status_code == 200, body.content
    assert ApiToken.objects.get().principal == "agent:triage"
    assert bank.memories.get(memory_id=body.json()["memory_id"]).metadata == {"_actor": "agent:triage"}
    # What the token does is audited under its principal.
    assert AuditEvent.objects.filter(action="memory.retain", actor="agent:triage").exists()


def test_create_api_token_rejects_unknown_permissions(bank):
    with pytest.raises(CommandError, match="unknown permission 'delete'"):
        call_command("create_api_token", "--name", "x", "--bank", "b", "--permissions", "delete",
                     stdout=StringIO(), stderr=StringIO())


def test_create_operator_with_roles(bank):
    out = StringIO()
    call_command("create_operator", "ines", "--bank", "user-alice", "--role", "viewer", stdout=out)
    user = get_user_model().objects.get(username="ines")
    assert not user.is_superuser
    assert BankMembership.objects.get(user=user).role == "viewer"
    assert "with password" in out.getvalue()
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_operator", "ines", stdout=StringIO())
