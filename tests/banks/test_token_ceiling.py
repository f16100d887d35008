"""A token an operator mints carries at most the minter's grants, now and later: when the minter's
role shrinks or goes, so does the token's reach."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from banks.models import ApiToken, BankMembership, BankRole
from banks.services.banks import bank_create
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

B = "team-one"


@pytest.fixture
def minted(django_user_model):
    """A curator of B mints a read/write token for B through the tokens page; its secret."""
    bank = bank_create(bank_id=B, actor="test")
    curator = django_user_model.objects.create_user(username="cora", password="pw-12345678")
    BankMembership.objects.create(user=curator, bank=bank, role=BankRole.CURATOR)
    page = Client()
    page.force_login(curator)
    response = page.post("/tokens/new", {"name": "cora-agent", "banks": B, "permissions": ["read", "write"]})
    assert response.status_code == 302, response.content[:300]
    token = ApiToken.objects.get(name="cora-agent")
    assert token.created_by_id == curator.pk
    return curator, bank, page


def _secret(page: Client) -> str:
    """The secret, shown once on the next load of the tokens page."""
    text = page.get("/tokens/").content.decode()
    found = re.search(r"mh_[0-9a-f]+_[A-Za-z0-9_-]+", text)
    assert found, "the new token's secret is shown once"
    return found.group(0)


def test_a_minted_token_dies_with_the_minters_role(minted):
    curator, bank, page = minted
    api = ApiClient(_secret(page))
    assert api.post("/v1/retain", {"bank_id": B, "content": "Minted tokens work."}).status_code == 200
    # The curator becomes a viewer: the token keeps only read.
    BankMembership.objects.filter(user=curator, bank=bank).update(role=BankRole.VIEWER)
    assert api.post("/v1/recall", {"bank_id": B, "query": "tokens"}).status_code == 200
    assert api.post("/v1/retain", {"bank_id": B, "content": "Not any more."}).status_code == 403
    # The role is removed: nothing is left.
    BankMembership.objects.filter(user=curator, bank=bank).delete()
    assert api.post("/v1/recall", {"bank_id": B, "query": "tokens"}).status_code == 403
    assert api.post("/v1/agent/memory_recall", {"bank_id": B, "query": "tokens"}).status_code == 403


def test_a_minted_token_dies_with_the_minters_account(minted):
    curator, _, page = minted
    api = ApiClient(_secret(page))
    assert api.post("/v1/recall", {"bank_id": B, "query": "x"}).status_code == 200
    curator.is_active = False
    curator.save()
    assert api.post("/v1/recall", {"bank_id": B, "query": "x"}).status_code == 403


def test_an_operator_cannot_mint_more_than_they_hold(minted):
    _, _, page = minted
    for banks, perms in ((B, ["admin"]), ("team-*", ["read"]), ("team-two", ["read"])):
        response = page.post("/tokens/new", {"name": "too-much", "banks": banks, "permissions": perms})
        assert response.status_code == 403
    assert not ApiToken.objects.filter(name="too-much").exists()


def test_the_service_refuses_it_whatever_calls_it(minted):
    from banks.access import principal_for_user
    from banks.services.tokens import token_create
    from memoryhub.errors import AccessDenied

    curator, _, _ = minted
    with pytest.raises(AccessDenied):
        token_create(name="direct", actor="test", grants=[{"bank": B, "permissions": ["admin"]}],
                     by=principal_for_user(curator))
