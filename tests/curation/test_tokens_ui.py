"""API tokens in the browser: only curators and admins mint them, secrets can expire."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from banks.models import ApiToken, BankMembership
from banks.selectors.token_rows import token_row_forget

pytestmark = pytest.mark.django_db


def test_a_viewer_cannot_mint_even_a_read_token(operator_client, operator, bank):
    BankMembership.objects.create(user=operator, bank=bank, role="viewer")
    page = operator_client.get("/tokens/").content.decode()
    assert "needs the curator or admin role" in page and "Create token</button>" not in page
    response = operator_client.post("/tokens/new", {"name": "x", "banks": "user-alice", "permissions": ["read"]})
    assert response.status_code == 403 and not ApiToken.objects.exists()


def test_a_curator_mints_what_they_hold_on_their_bank_only(operator_client, operator, bank, make_bank):
    BankMembership.objects.create(user=operator, bank=bank, role="curator")
    other = make_bank("team-ops")
    BankMembership.objects.create(user=operator, bank=other, role="viewer")
    refused = operator_client.post("/tokens/new", {"name": "x", "banks": "team-ops", "permissions": ["read"]})
    assert refused.status_code == 403 and "curator or admin role" in refused.content.decode()
    too_much = operator_client.post("/tokens/new", {"name": "x", "banks": "user-alice", "permissions": ["admin"]})
    assert too_much.status_code == 403
    ok = operator_client.post("/tokens/new", {"name": "reader", "banks": "user-alice",
                                              "permissions": ["read", "write"]})
    assert ok.status_code == 302
    assert ApiToken.objects.get().grants == [{"bank": "user-alice", "permissions": ["read", "write"]}]


def test_missing_name_keeps_the_typed_values(operator_client, operator, bank):
    BankMembership.objects.create(user=operator, bank=bank, role="admin")
    response = operator_client.post("/tokens/new", {"name": "", "banks": "user-alice", "permissions": ["read"]})
    page = response.content.decode()
    assert response.status_code == 422 and 'value="user-alice"' in page and "This field is required." in page


def test_an_expiring_token_stops_working_when_it_expires(admin_client_root, bank, client):
    admin_client_root.post("/tokens/new", {"name": "short", "banks": "user-alice", "permissions": ["read"],
                                           "expires_in_days": "7"})
    page = admin_client_root.get("/tokens/").content.decode()
    secret = page.split('id="token-secret">')[1].split("<")[0]
    assert 'data-copy="token-secret"' in page
    token = ApiToken.objects.get()
    assert timedelta(days=6) < token.expires_at - timezone.now() <= timedelta(days=7)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    assert client.get("/v1/banks", **auth).status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    token_row_forget(token.prefix)  # a write no service makes: this process's kept row would last seconds
    assert client.get("/v1/banks", **auth).status_code == 401
    assert "expired" in admin_client_root.get("/tokens/").content.decode()


@pytest.fixture
def admin_client_root(django_user_model):
    from django.test import Client

    c = Client()
    c.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    return c


def test_a_curator_names_an_agent_or_themselves_as_principal_not_another_person(operator_client, operator, bank):
    BankMembership.objects.create(user=operator, bank=bank, role="curator")
    base = {"banks": "user-alice", "permissions": ["read", "write"]}
    refused = operator_client.post("/tokens/new", {**base, "name": "x", "principal": "user:bob"})
    assert refused.status_code == 403 and "another person" in refused.content.decode()
    bad = operator_client.post("/tokens/new", {**base, "name": "x", "principal": "agent:has space"})
    assert bad.status_code == 422 and "principal" in bad.content.decode()
    for name, principal in (("triage", "agent:triage"), ("mine", "olga")):
        assert operator_client.post("/tokens/new", {**base, "name": name, "principal": principal}).status_code == 302
    assert dict(ApiToken.objects.values_list("name", "principal")) == {"triage": "agent:triage", "mine": "user:olga"}
