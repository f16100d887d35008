from __future__ import annotations

import pytest

from banks.models import BankMembership

pytestmark = pytest.mark.django_db


def test_login_is_required(client):
    response = client.get("/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_operator_sees_only_granted_banks(operator_client, operator, make_bank):
    mine = make_bank("user-alice")
    make_bank("user-bob")
    BankMembership.objects.create(user=operator, bank=mine, role="viewer")
    page = operator_client.get("/").content.decode()
    assert "user-alice" in page and "user-bob" not in page
    assert "/static/js/htmx.min.js" in page
    assert 'hx-headers=\'{"X-CSRFToken"' in page


def test_htmx_request_gets_the_partial(operator_client, operator, make_bank):
    BankMembership.objects.create(user=operator, bank=make_bank("user-alice"), role="viewer")
    partial = operator_client.get("/", {"q": "alice"}, HTTP_HX_REQUEST="true").content.decode()
    assert partial.strip().startswith('<div id="bank-table">') and "<html" not in partial


def test_pages_forbid_inline_scripts(operator_client):
    response = operator_client.get("/")
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "<script>" not in response.content.decode()


def test_static_htmx_is_served(client):
    response = client.get("/static/js/htmx.min.js")
    assert response.status_code == 200


def test_last_activity_is_filled_from_the_latest_change(admin_client_for_home, make_bank):
    from banks.services.memories import memory_retain

    bank = make_bank("busy")
    memory_retain(bank=bank, text="Something happened.", actor="test")
    page = admin_client_for_home.get("/").content.decode()
    row = page.split("<code>busy</code>")[1].split("</tr>")[0]
    assert "<time datetime=" in row and "UTC" in row


@pytest.fixture
def admin_client_for_home(django_user_model):
    from django.test import Client

    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="home-root", password="pw"))
    return client
