"""Who may read a bank and who may write into it: admin changes go through services and are audited."""

from __future__ import annotations

import pytest

from banks.models import AuditEvent, BankMembership, WebhookSource
from tests.factories import make_bank

pytestmark = pytest.mark.django_db


def test_a_membership_changed_in_the_admin_is_audited_on_its_bank(admin_client, django_user_model):
    bank = make_bank("team-admin")
    olga = django_user_model.objects.create_user(username="olga", password="pw-olga-123")
    response = admin_client.post("/admin/banks/bankmembership/add/", {"user": olga.pk, "bank": bank.pk,
                                                                     "role": "viewer"})
    assert response.status_code == 302, response.content.decode()[:2000]
    membership = BankMembership.objects.get(user=olga, bank=bank)
    response = admin_client.post(f"/admin/banks/bankmembership/{membership.pk}/change/",
                                 {"user": olga.pk, "bank": bank.pk, "role": "admin"})
    assert response.status_code == 302, response.content.decode()[:2000]
    # The bank's last admin stays (the service's rule holds in the admin too) ...
    response = admin_client.post(f"/admin/banks/bankmembership/{membership.pk}/delete/", {"post": "yes"})
    assert response.status_code == 409 and "olga is the last admin of bank team-admin" in response.content.decode()
    # ... until another operator is admin.
    BankMembership.objects.create(user=django_user_model.objects.create_user(username="ivan"), bank=bank, role="admin")
    response = admin_client.post(f"/admin/banks/bankmembership/{membership.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not BankMembership.objects.filter(user=olga).exists()
    events = list(AuditEvent.objects.filter(bank=bank, action__startswith="membership.").order_by("pk")
                  .values_list("action", "actor", "target_ids", "details"))
    assert events == [
        ("membership.set", "user:admin", ["olga"], {"role": "viewer"}),
        ("membership.set", "user:admin", ["olga"], {"role": "admin", "was": "viewer"}),
        ("membership.remove", "user:admin", ["olga"], {"role": "admin"}),
    ]


def test_a_webhook_secret_changed_in_the_admin_is_audited_without_its_value(admin_client):
    bank = make_bank("hooks-admin")
    source = WebhookSource.objects.create(source_id="crm", bank=bank, secret="first-secret")
    response = admin_client.post(f"/admin/banks/webhooksource/{source.pk}/change/", {
        "source_id": "crm", "bank": bank.pk, "secret": "second-secret", "enabled": "on",
        "signature_scheme": "timestamped", "signature_header": "X-Astrocyte-Signature", "tags": "[]"})
    assert response.status_code == 302, response.content.decode()[:3000]
    source.refresh_from_db()
    assert source.secret == "second-secret"
    event = AuditEvent.objects.get(bank=bank, action="webhook_source.update")
    assert event.actor == "user:admin" and event.target_ids == ["crm"]
    assert event.details["secret_changed"] is True and "secret" not in event.details["fields"]
    assert "second-secret" not in str(event.details) and "first-secret" not in str(event.details)
