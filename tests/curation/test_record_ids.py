"""Ids the API accepts work in every curation URL; unknown ids are 404 pages in the site layout."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from banks.models import Memory
from banks.services.memories import memory_retain
from banks.services.mental_models import mental_model_create
from curation.converters import decode_record_id, encode_record_id
from portability.formats.registry import open_archive
from portability.services.importer import archive_import
from tests.portability.fixtures import FIXTURES

ODD_IDS = ["note:Archive/Priya Raman (copy)", "a/b/c", "x?y#z", "50%", "./x", "a/../b", "a//b", "trailing/",
           "/leading", "~tilde", "back\\slash", "tab\there", "ünïcødé/名前", "edit", "new", "bulk", "x/edit"]


@pytest.mark.parametrize("value", ODD_IDS)
def test_every_id_survives_the_url_round_trip(value):
    assert decode_record_id(encode_record_id(value)) == value
    assert "/./" not in f"/{encode_record_id(value)}/" and "/../" not in f"/{encode_record_id(value)}/"


def test_plain_ids_stay_readable():
    assert encode_record_id("note:Archive/Priya Raman") == "note:Archive/Priya Raman"
    assert encode_record_id("47e3fdc44ffb465f") == "47e3fdc44ffb465f"


@pytest.fixture
def admin_client(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    return client


@pytest.fixture
def vault_bank(make_bank):
    bank = make_bank("vault")
    report = archive_import(bank=bank, records=open_archive(FIXTURES / "obsidian_vault")[2], actor="test")
    assert report.imported >= 5
    return bank


@pytest.mark.django_db
def test_every_screen_of_an_imported_obsidian_bank(admin_client, vault_bank):
    ids = list(Memory.objects.filter(bank=vault_bank).values_list("memory_id", flat=True))
    assert any("/" in i for i in ids), ids
    pages = ["/", "/?recall=Priya", "/banks/vault/", "/banks/vault/memories/", "/banks/vault/memories/?q=Priya",
             "/banks/vault/memories/?q=billing&page=2", "/banks/vault/memories/?state=all",
             "/banks/vault/time/?q=Priya", "/banks/vault/time/", "/banks/vault/graph/", "/banks/vault/observations/",
             "/banks/vault/models/", "/banks/vault/directives/", "/banks/vault/duplicates/",
             "/banks/vault/transfer/", "/banks/vault/reflect/?q=Priya", "/audit/?bank=vault"]
    pages += [reverse("curation:memory", args=["vault", i]) for i in ids]
    for url in pages:
        response = admin_client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    listing = admin_client.get("/banks/vault/memories/?state=all").content.decode()
    for memory_id in ids:
        assert reverse("curation:memory", args=["vault", memory_id]) in listing


@pytest.mark.django_db
@pytest.mark.parametrize("memory_id", ["note:Archive/x", "a/../b", "x?y#z", "~tilde", "edit"])
def test_odd_ids_open_edit_and_archive(admin_client, bank, memory_id):
    memory_retain(bank=bank, text=f"Memory called {memory_id}", actor="test", memory_id=memory_id)
    detail = reverse("curation:memory", args=["user-alice", memory_id])
    page = admin_client.get(detail)
    assert page.status_code == 200 and memory_id.encode() in page.content
    edit = admin_client.post(reverse("curation:memory-edit", args=["user-alice", memory_id]),
                             {"text": "Edited text.", "tags": "x"})
    assert edit.status_code in (200, 302)
    assert Memory.objects.get(bank=bank, memory_id=memory_id).text == "Edited text."
    admin_client.post(reverse("curation:memory-state", args=["user-alice", memory_id]), {"action": "archive"})
    assert Memory.objects.get(bank=bank, memory_id=memory_id).archived_at is not None


UNKNOWN = [
    ("get", "/banks/user-alice/memories/no-such-memory/"),
    ("get", "/banks/user-alice/memories/note:Archive/gone/"),
    ("get", "/banks/user-alice/memories/~!!!/"),
    ("post", "/banks/user-alice/memories/no-such-memory/edit"),
    ("post", "/banks/user-alice/memories/no-such-memory/state"),
    ("post", "/banks/user-alice/memories/no-such-memory/merge"),
    ("get", "/banks/user-alice/models/no-such-model/"),
    ("post", "/banks/user-alice/models/no-such-model/edit"),
    ("post", "/banks/user-alice/models/no-such-model/action"),
    ("get", "/banks/user-alice/graph/?entity=no-such-entity"),
    ("get", "/banks/user-alice/jobs/999999/"),
    ("post", "/tokens/nosuchprefix/revoke"),
    ("get", "/banks/no-such-bank/"),
    ("get", "/banks/no-such-bank/memories/x/"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "url"), UNKNOWN)
def test_unknown_ids_are_404_pages_in_the_layout(admin_client, bank, method, url):
    mental_model_create(bank=bank, model_id="known", title="Known", content="## A\n\nB.", actor="test")
    response = getattr(admin_client, method)(url, {"action": "archive", "op": "add_section", "heading": "h"}
                                             if method == "post" else {})
    assert response.status_code == 404, url
    body = response.content.decode()
    assert 'class="topbar"' in body and "Back to your banks" in body


@pytest.mark.django_db
def test_forbidden_is_a_403_page_in_the_layout(operator_client, operator, bank):
    from banks.models import BankMembership

    BankMembership.objects.create(user=operator, bank=bank, role="viewer")
    response = operator_client.post("/banks/user-alice/memories/new", {"text": "sneaky"})
    assert response.status_code == 403
    body = response.content.decode()
    assert 'class="topbar"' in body and "Back to bank user-alice" in body


def test_server_error_page_has_the_layout(rf, django_user_model, db):
    from memoryhub.views import server_error

    request = rf.get("/banks/x/")
    request.user = django_user_model(username="someone")
    response = server_error(request)
    assert response.status_code == 500 and b'class="topbar"' in response.content


def test_server_error_page_survives_a_broken_layout(rf, settings):
    from memoryhub.views import server_error

    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": ["/nonexistent"], "APP_DIRS": False}]
    response = server_error(rf.get("/"))
    assert response.status_code == 500 and b"Back to your banks" in response.content
