"""A bank's members page: its admins add operators, change roles and remove them through the membership
services (audited); the last admin stays; viewers and curators read the list and change nothing; another
bank's membership is a 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from banks.models import AuditEvent, BankMembership
from banks.services.memberships import membership_remove, membership_set
from memoryhub.errors import Conflict
from tests.factories import make_bank

pytestmark = pytest.mark.django_db


def _operator(django_user_model: Any, name: str) -> Any:
    return django_user_model.objects.create_user(username=name, password=f"pw-{name}-12345")


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_admin_adds_changes_and_removes_members_every_change_audited(operator, operator_client, bank,
                                                                        django_user_model):
    BankMembership.objects.create(user=operator, bank=bank, role="admin")
    _operator(django_user_model, "petra")
    page = operator_client.get("/banks/user-alice/members/")
    assert page.status_code == 200 and "Add an operator" in page.content.decode()

    added = operator_client.post("/banks/user-alice/members/add", {"username": "petra", "role": "curator"},
                                 follow=True)
    assert "petra is curator on user-alice." in added.content.decode()
    petra = BankMembership.objects.get(bank=bank, user__username="petra")
    assert petra.role == "curator"

    changed = operator_client.post(f"/banks/user-alice/members/{petra.pk}/role", {"role": "admin"}, follow=True)
    assert "petra is admin on user-alice." in changed.content.decode()
    operator_client.post(f"/banks/user-alice/members/{petra.pk}/remove", follow=True)
    assert not BankMembership.objects.filter(pk=petra.pk).exists()

    unknown = operator_client.post("/banks/user-alice/members/add", {"username": "nobody", "role": "viewer"},
                                   follow=True)
    assert unknown.status_code == 200 and "No active operator is named &#x27;nobody&#x27;" in unknown.content.decode()
    bad_role = operator_client.post("/banks/user-alice/members/add", {"username": "petra", "role": "owner"},
                                    follow=True)
    assert "role: must be one of viewer, curator, admin" in bad_role.content.decode()
    assert not BankMembership.objects.filter(user__username="petra").exists()

    events = list(AuditEvent.objects.filter(bank=bank, action__startswith="membership.").order_by("pk")
                  .values_list("action", "actor", "target_ids", "details"))
    assert events == [
        ("membership.set", "user:olga", ["petra"], {"role": "curator"}),
        ("membership.set", "user:olga", ["petra"], {"role": "admin", "was": "curator"}),
        ("membership.remove", "user:olga", ["petra"], {"role": "admin"}),
    ]


def test_the_last_admin_is_neither_removed_nor_demoted(operator, operator_client, bank, django_user_model):
    mine = BankMembership.objects.create(user=operator, bank=bank, role="admin")
    demoted = operator_client.post(f"/banks/user-alice/members/{mine.pk}/role", {"role": "viewer"}, follow=True)
    assert "olga is the last admin of bank user-alice: make another operator admin first" in demoted.content.decode()
    removed = operator_client.post(f"/banks/user-alice/members/{mine.pk}/remove", follow=True)
    assert "last admin" in removed.content.decode()
    mine.refresh_from_db()
    assert mine.role == "admin"
    # The same rule on every surface: the service refuses it for the Django admin and commands too.
    with pytest.raises(Conflict):
        membership_remove(membership=mine, actor="test")
    with pytest.raises(Conflict):
        membership_set(user=operator, bank=bank, role="curator", actor="test")
    with pytest.raises(Conflict):  # moving the last admin's membership to another bank leaves none here
        membership_set(user=operator, bank=make_bank("user-other"), role="admin", actor="test", membership=mine)

    # With a second admin, either one may step down.
    petra = _operator(django_user_model, "petra")
    membership_set(user=petra, bank=bank, role="admin", actor="test")
    operator_client.post(f"/banks/user-alice/members/{mine.pk}/role", {"role": "viewer"})
    mine.refresh_from_db()
    assert mine.role == "viewer"
    assert not AuditEvent.objects.filter(bank=bank, action="membership.remove").exists()


@pytest.mark.parametrize("role", ["viewer", "curator"])
def test_viewers_and_curators_see_the_members_and_change_nothing(role, operator, operator_client, bank,
                                                                 django_user_model):
    BankMembership.objects.create(user=operator, bank=bank, role=role)
    boss = BankMembership.objects.create(user=_operator(django_user_model, "boss"), bank=bank, role="admin")
    _operator(django_user_model, "petra")
    page = operator_client.get("/banks/user-alice/members/")
    text = page.content.decode()
    assert page.status_code == 200 and "boss" in text and "olga" in text
    assert "Add an operator" not in text and "Change role" not in text and "Remove" not in text
    mine = BankMembership.objects.get(user=operator, bank=bank)
    refused = {
        "promote oneself": operator_client.post(f"/banks/user-alice/members/{mine.pk}/role", {"role": "admin"}),
        "demote the admin": operator_client.post(f"/banks/user-alice/members/{boss.pk}/role", {"role": "viewer"}),
        "add someone": operator_client.post("/banks/user-alice/members/add", {"username": "petra", "role": "admin"}),
        "remove the admin": operator_client.post(f"/banks/user-alice/members/{boss.pk}/remove"),
    }
    assert {name: r.status_code for name, r in refused.items()} == dict.fromkeys(refused, 403)
    assert dict(BankMembership.objects.filter(bank=bank).values_list("user__username", "role")) == {
        "olga": role, "boss": "admin"}
    assert not AuditEvent.objects.filter(action__startswith="membership.").exists()


def test_another_banks_membership_and_an_unseen_bank_are_404(operator, operator_client, bank, django_user_model):
    BankMembership.objects.create(user=operator, bank=bank, role="admin")
    other = make_bank("team-other")
    theirs = BankMembership.objects.create(user=_operator(django_user_model, "ivan"), bank=other, role="admin")
    # Through my bank's URL: their membership is not one of my bank's.
    assert operator_client.post(f"/banks/user-alice/members/{theirs.pk}/role", {"role": "viewer"}).status_code == 404
    assert operator_client.post(f"/banks/user-alice/members/{theirs.pk}/remove").status_code == 404
    # Through their bank's URL: a bank I have no role on does not exist for me.
    assert operator_client.get("/banks/team-other/members/").status_code == 404
    assert operator_client.post(f"/banks/team-other/members/{theirs.pk}/remove").status_code == 404
    assert operator_client.post("/banks/team-other/members/add", {"username": "olga", "role": "admin"}).status_code == 404
    theirs.refresh_from_db()
    assert theirs.role == "admin" and not BankMembership.objects.filter(user=operator, bank=other).exists()


def test_a_superuser_without_a_role_manages_members(django_user_model, bank):
    root = django_user_model.objects.create_superuser(username="root", password="pw-root-12345")
    _operator(django_user_model, "petra")
    client = _client(root)
    client.post("/banks/user-alice/members/add", {"username": "petra", "role": "admin"})
    assert BankMembership.objects.get(bank=bank).role == "admin"
