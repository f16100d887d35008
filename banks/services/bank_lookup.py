"""A request's bank, looked up for its caller: refused without the permission (the same 403 whether or
not the bank exists), created on first use when the caller may write, read as empty when it was never
written. Every interface resolves banks through here (REST, MCP and the agent tools); the services check
the caller again themselves (``banks.access.authorize``). A service, not part of ``banks.access``,
because it may create the bank: ``banks.access`` imports no service."""

from __future__ import annotations

from django.conf import settings

from banks.access import Principal
from banks.models import Bank
from banks.models.rows import first_row
from banks.services.banks import bank_create
from memoryhub.errors import AccessDenied, BankNotFound, InvalidInput
from memoryhub.input_rules import check_bank_id


def bank_for(principal: Principal, bank_id: str, permission: str, *, create: bool = False,
             empty_if_missing: bool = False) -> Bank:
    """The bank ``bank_id`` if ``principal`` holds ``permission`` on it.

    With ``create`` (retain, import, live-memory creates), a bank the caller may write to is
    created on first use, as Astrocyte's implicit banks are, unless MEMORYHUB_AUTO_CREATE_BANKS is
    off. With ``empty_if_missing`` (reads, and deletes that find nothing) a granted bank that was
    never written is answered as an empty bank, without creating it; otherwise it is a 404.
    """
    if not isinstance(bank_id, str) or not bank_id:
        raise InvalidInput("Field required", field="bank_id")
    check_bank_id(bank_id)
    perms = principal.permissions_for(bank_id)
    if permission not in perms:
        raise AccessDenied(principal.label, permission, bank_id)
    bank = first_row(Bank, "bank_id = %s AND deleted_at IS NULL", [bank_id])  # Bank.objects.active()
    if bank is not None:
        return bank
    if create and settings.MEMORYHUB_AUTO_CREATE_BANKS:
        return bank_create(bank_id=bank_id, actor=principal.label, get_existing=True)
    if empty_if_missing:
        return Bank.never_written(bank_id)
    raise BankNotFound(bank_id)


def requested_bank_ids(bank_id: object, banks: object) -> list[str]:
    """The bank ids a read names: ``bank_id`` first, then ``banks``, each once."""
    if banks is not None and (not isinstance(banks, list) or not all(isinstance(b, str) for b in banks)):
        raise InvalidInput("must be a list of bank ids", field="banks")
    first = [bank_id] if isinstance(bank_id, str) and bank_id else []
    return list(dict.fromkeys(first + list(banks or [])))


def banks_to_read(principal: Principal, bank_ids: list[str], permission: str = "read") -> list[Bank]:
    """Every named bank, each checked for ``permission`` before any is read. A granted bank that was
    never written reads as empty (as Astrocyte answers an unknown bank), so one new bank in a
    multi-bank read never fails the others. REST, MCP and the agent tools all resolve through here."""
    return [bank_for(principal, bank_id, permission, empty_if_missing=True) for bank_id in bank_ids or [""]]


__all__ = ["bank_for", "banks_to_read", "requested_bank_ids"]
