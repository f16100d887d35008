"""Legal holds on the bank page: bank admins place and release them, everyone with access sees them,
and the audit log shows them and the erase that overrode one."""

from __future__ import annotations

import pytest

from banks.models import AuditEvent, BankMembership, LegalHold
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


def test_admin_places_and_releases_a_hold(operator, operator_client, bank):
    BankMembership.objects.create(user=operator, bank=bank, role="admin")
    answer = operator_client.post("/banks/user-alice/holds", {"hold_id": "case-9", "reason": "litigation"},
                                  follow=True)
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "Legal hold case-9 is active" in page and "Release case-9" in page
    hold = LegalHold.objects.active().get(bank=bank)
    assert hold.reason == "litigation" and hold.set_by == "user:olga"

    refused = operator_client.post("/banks/user-alice/holds", {"hold_id": "", "reason": "x"}, follow=True)
    assert "hold_id: must be a non-empty string" in refused.content.decode()

    operator_client.post("/banks/user-alice/holds/case-9/release", follow=True)
    assert not LegalHold.objects.active().filter(bank=bank).exists()
    audit = operator_client.get("/audit/").content.decode()
    assert "bank.hold_set" in audit and "bank.hold_release" in audit


def test_viewer_sees_the_hold_but_cannot_change_it(operator, operator_client, bank):
    BankMembership.objects.create(user=operator, bank=bank, role="viewer")
    LegalHold.objects.create(bank=bank, hold_id="case-1", reason="audit", set_by="user:legal")
    page = operator_client.get("/banks/user-alice/").content.decode()
    assert "case-1" in page and "Place legal hold" not in page and "Release case-1" not in page
    assert operator_client.post("/banks/user-alice/holds", {"hold_id": "x", "reason": "y"}).status_code == 403
    assert operator_client.post("/banks/user-alice/holds/case-1/release").status_code == 403
    assert LegalHold.objects.active().filter(bank=bank).count() == 1


def test_audit_log_names_the_hold_an_erase_overrode(django_user_model, client, bank):
    root = django_user_model.objects.create_superuser(username="root", password="pw")
    client.force_login(root)
    memory = memory_retain(bank=bank, text="Alice's phone number is 555-0100.", actor="test").memory
    LegalHold.objects.create(bank=bank, hold_id="case-7", reason="litigation", set_by="user:legal")
    memory_forget(bank=bank, actor="user:root", memory_ids=[memory.memory_id], compliance=True,
                  reason="erasure request")
    assert AuditEvent.objects.get(action="memory.erase").details["overrode_holds"] == ["case-7"]
    assert "overrode hold case-7" in client.get("/audit/").content.decode()


def test_admin_sets_the_lifecycle_policy_and_runs_it(operator, operator_client, bank):
    from banks.models import Job, LifecyclePolicy

    BankMembership.objects.create(user=operator, bank=bank, role="admin")
    bad = operator_client.post("/banks/user-alice/lifecycle", {"enabled": "on", "delete_after_days": "soon"},
                               follow=True)
    assert "must be a whole number of days" in bad.content.decode()
    operator_client.post("/banks/user-alice/lifecycle", {"enabled": "on", "delete_after_days": "365",
                                                         "archive_after_days": "", "exempt_tags": "legal, pinned"})
    policy = LifecyclePolicy.objects.get(bank=bank)
    assert (policy.delete_after_days, policy.archive_after_days, policy.exempt_tags) == (365, None,
                                                                                         ["legal", "pinned"])
    answer = operator_client.post("/banks/user-alice/lifecycle/run")
    job = Job.objects.get(kind="lifecycle", bank=bank)
    assert answer.status_code == 302 and answer["Location"] == f"/banks/user-alice/jobs/{job.pk}/"
    assert "Delete after 365 days" in operator_client.get("/banks/user-alice/").content.decode()
