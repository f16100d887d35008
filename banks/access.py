"""Who may do what on which bank.

A ``Principal`` is either an API token (grants of bank-id globs to permissions)
or a curation operator (per-bank roles; superusers see every bank).

Lookups answer so that bank names never leak: a caller with no grant at all on
a bank id gets the same 403 whether or not the bank exists; a caller with a
grant on an id that does not exist gets a 404.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet

from banks.models import Bank, BankMembership, BankRole
from memoryhub.errors import AccessDenied, InvalidInput

PERMISSIONS = ("read", "write", "forget", "admin")
ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    BankRole.VIEWER: frozenset({"read"}),
    BankRole.CURATOR: frozenset({"read", "write", "forget"}),
    BankRole.ADMIN: frozenset(PERMISSIONS),
}


def normalise_permissions(values: list[str] | tuple[str, ...]) -> frozenset[str]:
    """``*`` stands for every permission (as Astrocyte's documentation promises)."""
    perms: set[str] = set()
    for value in values:
        value = value.strip().lower()
        if value == "*":
            perms.update(PERMISSIONS)
        elif value in PERMISSIONS:
            perms.add(value)
        else:
            raise InvalidInput(f"unknown permission {value!r}; use read, write, forget, admin or *",
                               field="permissions")
    return frozenset(perms)


@dataclass
class Principal:
    label: str
    grants: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    is_superuser: bool = False
    user_id: int | None = None
    token_id: int | None = None
    # A token an operator minted holds at most what its minter holds now: losing a role (or the
    # account) takes it from the token too.
    ceiling: Principal | None = None

    def permissions_for(self, bank_id: str) -> frozenset[str]:
        if self.is_superuser:
            perms: set[str] = set(PERMISSIONS)
        else:
            perms = set()
            for pattern, granted in self.grants:
                if fnmatch.fnmatchcase(bank_id, pattern):
                    perms |= granted
        if self.ceiling is not None:
            perms &= self.ceiling.permissions_for(bank_id)
        return frozenset(perms)

    def can(self, bank_id: str, permission: str) -> bool:
        return permission in self.permissions_for(bank_id)

    def visible_banks(self) -> QuerySet[Bank]:
        banks = Bank.objects.active()
        if self.is_superuser:
            return banks
        if self.user_id is not None:
            return banks.filter(memberships__user_id=self.user_id)
        ids = [b.pk for b in banks.only("pk", "bank_id") if self.permissions_for(b.bank_id)]
        return banks.filter(pk__in=ids)

    def readable_banks(self) -> QuerySet[Bank]:
        """The banks whose names this caller may list: those it holds ``read`` on."""
        if self.is_superuser or self.user_id is not None:
            return self.visible_banks()  # every operator role includes read
        banks = Bank.objects.active()
        ids = [b.pk for b in banks.only("pk", "bank_id") if self.can(b.bank_id, "read")]
        return banks.filter(pk__in=ids)

    def banks_with(self, permission: str) -> list[Bank]:
        """The existing banks this caller holds ``permission`` on, by id (the admin listings)."""
        return [b for b in self.visible_banks().order_by("bank_id") if self.can(b.bank_id, permission)]

    def require_some_read(self) -> None:
        """Listing anything needs ``read`` on at least one bank pattern; a write-only token is refused."""
        if self.is_superuser or self.user_id is not None:
            return
        if not any("read" in granted for _, granted in self.grants):
            raise AccessDenied(self.label, "read", "*")


def principal_for_token(token: object) -> Principal:
    grants = []
    for grant in getattr(token, "grants", []) or []:
        grants.append((str(grant.get("bank", "")), normalise_permissions(grant.get("permissions", []))))
    label = getattr(token, "principal", "") or f"token:{token.prefix}"  # type: ignore[attr-defined]
    principal = Principal(label=label, grants=grants, token_id=token.pk)  # type: ignore[attr-defined]
    minter_id = getattr(token, "created_by_id", None)
    if minter_id is not None:
        from django.contrib.auth import get_user_model

        minter = get_user_model().objects.filter(pk=minter_id, is_active=True).first()
        # A minter whose account is gone or disabled leaves the token nothing.
        principal.ceiling = principal_for_user(minter) if minter is not None else Principal(label="nobody")
    return principal


def principal_for_user(user: AbstractBaseUser | AnonymousUser) -> Principal:
    if getattr(user, "is_superuser", False):
        return Principal(label=f"user:{user.get_username()}", is_superuser=True, user_id=user.pk)
    grants = [
        (bank_id, ROLE_PERMISSIONS.get(role, frozenset()))
        for bank_id, role in BankMembership.objects.filter(user_id=user.pk or 0, bank__deleted_at__isnull=True)
        .values_list("bank__bank_id", "role")
    ]
    return Principal(label=f"user:{user.get_username()}", grants=grants, user_id=user.pk)


# The permission each privileged operation needs, decided here once for every surface (REST, MCP and
# agent tools, operator pages, bulk actions, the admin); the services check it at their entry with
# ``authorize``.
def forget_permission(*, scope: str | None = None, compliance: bool = False, erase: bool = False) -> str:
    """A compliance erase, a purge and a whole-bank forget are admin matters; any other forget is ``forget``."""
    return "admin" if compliance or erase or scope == "all" else "forget"


def bulk_permission(action: str, *, compliance: bool = False) -> str:
    return forget_permission(compliance=compliance) if action == "forget" else "write"


def authorize(by: Principal | None, bank_id: str, permission: str) -> None:
    """Refuse ``by`` unless it holds ``permission`` on ``bank_id``. ``None`` is the server acting on its
    own authority (a periodic task, a management command run by the server's user); every request
    surface passes the caller."""
    if by is not None and not by.can(bank_id, permission):
        raise AccessDenied(by.label, permission, bank_id)
