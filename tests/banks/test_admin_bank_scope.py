"""A staff user sees in the admin only the banks they hold a role on: for every registered admin of
a bank's rows, a row of another bank is absent from the listing and a 404 on its change page, while
a superuser sees both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from banks import models
from banks.models import Bank
from banks.services.tokens import token_create
from tests.factories import make_bank, make_memory

pytestmark = pytest.mark.django_db


def _memory(bank: Bank, tag: str) -> models.Memory:
    return make_memory(bank, f"The {tag} release ships on Friday.")


def _entity(bank: Bank, tag: str) -> models.Entity:
    return models.Entity.objects.create(bank=bank, entity_id=f"ent-{tag}", name=f"Ent {tag}")


def _model(bank: Bank, tag: str) -> models.MentalModel:
    return models.MentalModel.objects.create(bank=bank, model_id=f"mm-{tag}", title=f"Model {tag}",
                                             refreshed_at=timezone.now())


def _token(bank: Bank, tag: str) -> models.ApiToken:
    token, _ = token_create(name=f"tok-{tag}", actor="test", grants=[{"bank": bank.bank_id, "permissions": ["read"]}])
    return token


def _membership(bank: Bank, tag: str) -> models.BankMembership:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(username=f"member-{tag}", password="pw-12345678")
    return models.BankMembership.objects.create(user=user, bank=bank, role="viewer")


# One row in a given bank, for every model whose admin must be scoped to the user's banks.
MAKERS: dict[type[Any], Callable[[Bank, str], Any]] = {
    models.Bank: lambda bank, tag: bank,
    models.BankMembership: _membership,
    models.Memory: _memory,
    models.Entity: _entity,
    models.EntityLink: lambda bank, tag: models.EntityLink.objects.create(
        bank=bank, entity_a=_entity(bank, f"{tag}-a"), entity_b=_entity(bank, f"{tag}-b"), link_type="knows"),
    models.MemoryLink: lambda bank, tag: models.MemoryLink.objects.create(
        bank=bank, source=_memory(bank, f"{tag}-s"), target=_memory(bank, f"{tag}-t"), link_type="related"),
    models.Observation: lambda bank, tag: models.Observation.objects.create(
        bank=bank, observation_id=f"obs-{tag}", text=f"Observed {tag}.", created_at=timezone.now(),
        updated_at=timezone.now()),
    models.MentalModel: _model,
    models.MentalModelRevision: lambda bank, tag: models.MentalModelRevision.objects.create(
        bank=bank, model=_model(bank, f"{tag}-r"), number=1, title="r1", action="create", author="test"),
    models.WikiPage: lambda bank, tag: models.WikiPage.objects.create(
        bank=bank, page_id=f"wiki:{tag}", scope=tag, title=f"Page {tag}", content="text"),
    models.AuditEvent: lambda bank, tag: models.AuditEvent.objects.create(
        bank=bank, bank_ref=bank.bank_id, actor="test", action="memory.retain", target_ids=[f"t-{tag}"]),
    models.ApiToken: _token,
    models.Job: lambda bank, tag: models.Job.objects.create(kind="export", bank=bank),
    models.WebhookSource: lambda bank, tag: models.WebhookSource.objects.create(
        source_id=f"hook-{tag}", bank=bank, secret="s" * 32),
}


def _bank_scoped(model: type[Any]) -> bool:
    return model in (Bank, models.ApiToken) or any(
        f.many_to_one and f.related_model is Bank for f in model._meta.get_fields())


def _registered() -> list[type[Any]]:
    return sorted((m for m in admin.site._registry if _bank_scoped(m)), key=lambda m: m.__name__)


def _change(obj: Any) -> str:
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{obj.pk}/change/"


@pytest.fixture
def staff_on_a(django_user_model: Any) -> tuple[Any, Bank, Bank]:
    bank_a, bank_b = make_bank("team-a"), make_bank("team-b")
    user = django_user_model.objects.create_user(username="staff-a", password="pw-12345678", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="banks"))
    models.BankMembership.objects.create(user=user, bank=bank_a, role="admin")
    return user, bank_a, bank_b


def test_every_bank_scoped_admin_has_a_maker():
    assert set(_registered()) == set(MAKERS), "a new admin of a bank's rows needs a row maker here"


SCOPED = sorted(MAKERS, key=lambda m: m.__name__)


@pytest.mark.parametrize("model", SCOPED, ids=[m.__name__ for m in SCOPED])
def test_a_staff_user_sees_only_their_banks_rows(model, staff_on_a, django_user_model):
    user, bank_a, bank_b = staff_on_a
    row_a, row_b = MAKERS[model](bank_a, "a"), MAKERS[model](bank_b, "b")
    listing = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    staff = Client()
    staff.force_login(user)
    page = staff.get(listing)
    assert page.status_code == 200
    body = page.content.decode()
    assert _change(row_a) in body and _change(row_b) not in body
    assert staff.get(_change(row_a)).status_code == 200
    assert staff.get(_change(row_b)).status_code == 404
    assert staff.get(_change(row_b).replace("/change/", "/history/")).status_code == 404

    root = Client()
    root.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    body = root.get(listing).content.decode()
    assert _change(row_a) in body and _change(row_b) in body
    assert root.get(_change(row_b)).status_code == 200


def test_bank_choices_and_autocomplete_offer_only_the_users_banks(staff_on_a):
    user, bank_a, bank_b = staff_on_a
    staff = Client()
    staff.force_login(user)
    found = staff.get("/admin/autocomplete/", {"app_label": "banks", "model_name": "webhooksource",
                                               "field_name": "bank", "term": "team"}).json()
    assert [r["text"] for r in found["results"]] == [str(bank_a)]
    # A bank outside the user's is not a valid choice even when posted by hand.
    response = staff.post("/admin/banks/bankmembership/add/", {"user": user.pk, "bank": bank_b.pk, "role": "admin"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not models.BankMembership.objects.filter(user=user, bank=bank_b).exists()


def test_tokens_shown_are_within_the_users_banks_or_their_own(staff_on_a):
    user, bank_a, bank_b = staff_on_a
    inside = _token(bank_a, "inside")
    glob, _ = token_create(name="glob", actor="test", grants=[{"bank": "team-*", "permissions": ["read"]}])
    mixed, _ = token_create(name="mixed", actor="test", grants=[
        {"bank": "team-a", "permissions": ["read"]}, {"bank": "team-b", "permissions": ["read"]}])
    own = models.ApiToken.objects.create(name="own", prefix="ownprefix", secret_hash="x" * 64, created_by=user,
                                         grants=[{"bank": "team-b", "permissions": ["read"]}])
    staff = Client()
    staff.force_login(user)
    body = staff.get("/admin/banks/apitoken/").content.decode()
    assert _change(inside) in body and _change(own) in body
    assert _change(glob) not in body and _change(mixed) not in body


def test_audit_events_of_other_banks_and_of_no_bank_are_hidden(staff_on_a):
    user, bank_a, bank_b = staff_on_a
    gone = models.AuditEvent.objects.create(bank=None, bank_ref="team-a", actor="test", action="bank.delete")
    staff = Client()
    staff.force_login(user)
    assert staff.get(_change(gone)).status_code == 404


def test_scoping_adds_no_query_per_row(staff_on_a):
    user, bank_a, bank_b = staff_on_a
    for n in range(3):
        make_memory(bank_a, f"Fact number {n} of the scoped bank.")
    staff = Client()
    staff.force_login(user)
    counts = []
    for more in (range(3, 13), range(0)):
        with CaptureQueriesContext(connection) as queries:
            assert staff.get("/admin/banks/memory/").status_code == 200
        counts.append(len(queries))
        for n in more:
            make_memory(bank_a, f"Fact number {n} of the scoped bank.")
    assert counts[0] == counts[1] and counts[0] <= 8, counts


def _staff(django_user_model: Any, role: str, bank: Bank) -> tuple[Any, Client]:
    user = django_user_model.objects.create_user(username=f"staff-{role}", password="pw-12345678", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="banks"))
    models.BankMembership.objects.create(user=user, bank=bank, role=role)
    client = Client()
    client.force_login(user)
    return user, client


def test_seeing_a_banks_rows_is_not_changing_them(django_user_model):
    bank = make_bank("team-a")
    user, viewer = _staff(django_user_model, "viewer", bank)
    membership = models.BankMembership.objects.get(user=user)
    memory = _memory(bank, "viewer")
    source = MAKERS[models.WebhookSource](bank, "a")
    refused = {
        "promote oneself": viewer.post(f"/admin/banks/bankmembership/{membership.pk}/change/",
                                       {"user": user.pk, "bank": bank.pk, "role": "admin"}),
        "edit a memory": viewer.post(f"/admin/banks/memory/{memory.pk}/change/", {
            "text": "Rewritten by a viewer.", "tags": "", "metadata": "{}", "fact_type": "world",
            "occurred_at_0": "", "occurred_at_1": ""}),
        "add a webhook source": viewer.post("/admin/banks/webhooksource/add/", {
            "source_id": "hook-new", "bank": bank.pk, "secret": "t" * 32, "enabled": "on",
            "signature_scheme": "timestamped", "signature_header": "X-Webhook-Signature", "tags": "[]"}),
        "delete a webhook source": viewer.post(f"/admin/banks/webhooksource/{source.pk}/delete/", {"post": "yes"}),
    }
    assert {name: r.status_code for name, r in refused.items()} == dict.fromkeys(refused, 403)
    membership.refresh_from_db()
    memory.refresh_from_db()
    assert membership.role == "viewer" and memory.text == "The viewer release ships on Friday."
    assert list(models.WebhookSource.objects.values_list("source_id", flat=True)) == ["hook-a"]

    _, owner = _staff(django_user_model, "admin", bank)
    response = owner.post(f"/admin/banks/bankmembership/{membership.pk}/change/",
                          {"user": user.pk, "bank": bank.pk, "role": "curator"})
    assert response.status_code == 302
    membership.refresh_from_db()
    assert membership.role == "curator"


def test_admin_actions_are_decided_by_the_services(django_user_model):
    bank = make_bank("team-a")
    user, viewer = _staff(django_user_model, "viewer", bank)
    observation = MAKERS[models.Observation](bank, "a")
    response = viewer.post("/admin/banks/observation/", {"action": "invalidate_selected",
                                                          "_selected_action": [observation.pk]})
    assert response.status_code == 403
    observation.refresh_from_db()
    assert observation.invalidated_at is None

    # Tokens: each operator revokes the tokens they minted, as on the tokens page; a superuser any.
    others = _token(bank, "others")
    own = models.ApiToken.objects.create(name="own", prefix="ownprefix", secret_hash="x" * 64, created_by=user,
                                         grants=[{"bank": "team-a", "permissions": ["read"]}])
    viewer.post("/admin/banks/apitoken/", {"action": "revoke_selected", "_selected_action": [others.pk, own.pk]})
    assert not models.ApiToken.objects.get(pk=others.pk).revoked_at
    assert models.ApiToken.objects.get(pk=own.pk).revoked_at


def test_a_webhook_secret_is_shown_only_to_who_administers_the_bank(django_user_model):
    bank = make_bank("team-a")
    source = MAKERS[models.WebhookSource](bank, "a")
    _, viewer = _staff(django_user_model, "viewer", bank)
    _, owner = _staff(django_user_model, "admin", bank)
    page = viewer.get(_change(source))
    assert page.status_code == 200 and source.secret not in page.content.decode()
    assert source.secret in owner.get(_change(source)).content.decode()
