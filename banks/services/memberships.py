"""Bank memberships: which operator may read, curate or administer a bank in the curation UI.

Every change is audited on the bank (who gained or lost which role): a membership decides who reads a
bank's memories, so a change made anywhere (the admin, the members page, a command) must leave a trace.
A bank that has an administrator keeps one: its last admin cannot be removed, demoted or moved away
(someone must be left who can grant roles without a superuser).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from banks.access import Principal, authorize
from banks.models import Bank, BankMembership, BankRole
from banks.services.audit import audit_record
from memoryhub.errors import Conflict, InvalidInput


def _keep_an_admin(bank: Bank, leaving: BankMembership) -> None:
    """Refuse to take away ``leaving``'s admin role when it is the bank's last. The bank's admin rows are
    locked first, so two admins demoting each other at once cannot both pass: the second re-reads."""
    admins = list(BankMembership.objects.select_for_update().filter(bank=bank, role=BankRole.ADMIN)
                  .order_by("pk").values_list("pk", flat=True))
    if leaving.pk in admins and len(admins) == 1:
        raise Conflict(f"{leaving.user.get_username()} is the last admin of bank {bank.bank_id}: make another "
                       "operator admin first", field="role")


def membership_set(*, user: Any, bank: Bank, role: str, actor: str,
                   membership: BankMembership | None = None, by: Principal | None = None) -> BankMembership:
    """Give ``user`` the ``role`` on ``bank``, or change ``membership`` (which may move to another user or
    bank). One audit event on each bank concerned, never a silent change of who reads a bank."""
    # Who reads a bank is the bank's administrators' decision, on the bank a membership leaves too.
    authorize(by, bank.bank_id, "admin")
    if role not in BankRole.values:
        raise InvalidInput(f"must be one of {', '.join(BankRole.values)}", field="role")
    with transaction.atomic():
        row = (BankMembership.objects.select_for_update().select_related("user", "bank")
               .filter(pk=membership.pk).first() if membership is not None and membership.pk else None)
        if row is None:
            row = BankMembership.objects.select_for_update().filter(user=user, bank=bank).first()
        was = (row.user.get_username(), row.bank, row.role) if row is not None else None
        if was is not None and was[1].pk != bank.pk:
            authorize(by, was[1].bank_id, "admin")
        if row is not None and (role != BankRole.ADMIN or row.bank_id != bank.pk or row.user_id != user.pk):
            _keep_an_admin(row.bank, row)
        if row is None:
            row = BankMembership.objects.create(user=user, bank=bank, role=role)
        else:
            row.user, row.bank, row.role = user, bank, role
            row.save(update_fields=["user", "bank", "role"])
        if was is not None and (was[0] != user.get_username() or was[1].pk != bank.pk):
            audit_record(actor=actor, action="membership.remove", bank=was[1], target_ids=[was[0]],
                         details={"role": was[2], "replaced_by": [user.get_username(), bank.bank_id]})
            was = None
        audit_record(actor=actor, action="membership.set", bank=bank, target_ids=[user.get_username()],
                     details={"role": role, **({"was": was[2]} if was is not None else {})})
    return row


def membership_remove(*, membership: BankMembership, actor: str, by: Principal | None = None) -> None:
    authorize(by, membership.bank.bank_id, "admin")
    with transaction.atomic():
        _keep_an_admin(membership.bank, membership)
        audit_record(actor=actor, action="membership.remove", bank=membership.bank,
                     target_ids=[membership.user.get_username()], details={"role": membership.role})
        membership.delete()


__all__ = ["membership_remove", "membership_set"]
